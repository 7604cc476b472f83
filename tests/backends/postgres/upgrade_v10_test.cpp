// Upgrading a PostgreSQL schema from version 9 to 10 (one name, one lock across modes; one fence
// counter) with holds live, in a schema of the test's own: an advisory hold and a pessimistic
// hold that version-9 clients took stay exclusive against every mode of the new routines, their
// holders still release them, and every fence given after the upgrade exceeds both old ones,
// although the row modes' counter was far ahead of advisory mode's.
#include <gtest/gtest.h>

#include <algorithm>

#include "backends/postgres/dialect.hpp"
#include "pg_env.hpp"
#include "sql/sql_engine.hpp"

namespace sqlock::test {
namespace {

// sqlock.lock_key(name) of version 9, for a session that takes an advisory hold by hand.
constexpr const char* key_sql =
    "('x' || encode(substr(sha256(convert_to($1, 'UTF8')), 1, 8), 'hex'))::bit(64)::bigint";

TEST_F(postgres, migrate_to_v10_keeps_version_9_holds_exclusive_across_modes) {
  const std::string schema = "sqlock_v9_" + random_token().substr(0, 8);
  schema_guard guard(owner_, schema);
  const auto& b = sqlock::postgres::bundle();
  auto dc = dba();
  {
    pqxx::nontransaction tx(dc);
    for (const auto& f : b.migrations)
      if (sql::migration_version(f.name) <= 9) tx.exec(sqlock::postgres::render(f.text, schema));
    // The epoch a version-9 acquire raised, and a row-mode counter far ahead of advisory mode's.
    tx.exec("UPDATE " + schema + ".fence_epoch SET epoch = epoch + 1");
    tx.exec("INSERT INTO " + schema + ".fence_epoch_live (epoch) SELECT epoch FROM " + schema +
            ".fence_epoch");
    tx.exec("SELECT setval('" + schema + ".fence_seq', 5000)");
  }
  const auto row_name = unique_name("v9-row");
  const auto adv_name = unique_name("v9-advisory");
  pqxx::nontransaction tx(dc);
  // What version 9's acquire_pessimistic leaves: the name's row, fence (epoch << 44) | fence_seq.
  const auto row_fence =
      tx.exec_params1("INSERT INTO " + schema +
                          ".locks (name, owner, mode, fence, acquired_at, expires_at) "
                          "SELECT $1, 'v9-owner', 'pessimistic', (e.epoch << 44) | nextval('" +
                          schema + ".fence_seq'), now(), now() + interval '1 hour' FROM " + schema +
                          ".fence_epoch_live e RETURNING fence",
                      row_name)[0]
          .as<std::uint64_t>();
  // What version 9's advisory_lock_key leaves: a session holding the name's key, and the fence's
  // int4 pair in share mode; the fence (epoch << 44) | advisory_fence_seq.
  auto holder_conn = std::make_unique<pqxx::connection>(owner_);
  std::uint64_t adv_fence = 0;
  {
    pqxx::nontransaction htx(*holder_conn);
    adv_fence = htx.exec1("SELECT (e.epoch << 44) | nextval('" + schema +
                          ".advisory_fence_seq') FROM " + schema + ".fence_epoch_live e")[0]
                    .as<std::uint64_t>();
    htx.exec_params("SELECT pg_advisory_lock(" + std::string(key_sql) + ")", adv_name);
    htx.exec_params(
        "SELECT pg_advisory_lock_shared(($1::bigint >> 32)::integer, "
        "($1::bigint & 4294967295)::bit(32)::integer)",
        static_cast<long long>(adv_fence));
  }
  ASSERT_LT(adv_fence, row_fence);

  const auto owner = pg::with(owner_, "schema=" + schema);
  sqlock::connect(pg::with(owner, "migrate=auto"));  // to version 10, the holds live
  EXPECT_EQ(tx.exec1("SELECT " + schema + ".schema_version()")[0].as<int>(),
            sql::latest_version(b));

  std::uint64_t highest = row_fence;
  for (const char* mode : {"pessimistic", "optimistic", "advisory"}) {
    SCOPED_TRACE(mode);
    auto c = sqlock::connect(pg::with(owner, std::string("mode=") + mode));
    EXPECT_FALSE(c.make_lock(row_name).try_lock());
    EXPECT_FALSE(c.make_lock(adv_name).try_lock());
    EXPECT_FALSE(c.make_shared_mutex(adv_name).try_lock_shared());
    // A name nobody held: its fence is above both old ones (one counter, moved above both).
    auto l = c.make_lock(unique_name("v10-fresh"));
    ASSERT_TRUE(l.try_lock());
    EXPECT_GT(l.fence(), highest);
    highest = std::max(highest, l.fence());
  }

  // The old holders end their holds through the new schema: the row's owner with the version-10
  // release, the advisory session by closing. Then both names are free, with higher fences.
  EXPECT_TRUE(
      tx.exec_params1("SELECT " + schema + ".release_pessimistic($1, 'v9-owner')", row_name)[0]
          .as<bool>());
  holder_conn.reset();
  for (const char* mode : {"advisory", "pessimistic"}) {
    SCOPED_TRACE(mode);
    auto c = sqlock::connect(pg::with(owner, std::string("mode=") + mode));
    for (const auto& name : {row_name, adv_name}) {
      auto l = c.make_lock(name);
      ASSERT_TRUE(l.try_lock_for(std::chrono::seconds(10)));
      EXPECT_GT(l.fence(), highest);
      highest = l.fence();
      l.unlock();
    }
  }
}

}  // namespace
}  // namespace sqlock::test
