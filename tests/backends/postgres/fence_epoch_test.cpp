// The fence epoch in the row modes (migration V007): a server whose fence sequence went back -
// what a standby promoted before it received the newest values does - and whose UNLOGGED tables
// are empty (a promotion or crash empties them) still hands out fences above every earlier one,
// in every row mode and kind; and a schema upgraded to V007 with a row hold live keeps rising.
// (The real failover is measured by the chaos driver: docs/reliability.md.)
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "backends/postgres/dialect.hpp"
#include "pg_env.hpp"
#include "sql/sql_engine.hpp"
#include "sqlock/backend.hpp"
#include "sqlock/semaphore.hpp"
#include "sqlock/shared_mutex.hpp"

namespace sqlock::test {
namespace {

// What a promoted standby that missed the newest sequence values looks like to the next acquire.
void promote_behind(pqxx::connection& dc, const std::string& schema) {
  pqxx::nontransaction tx(dc);
  tx.exec("DELETE FROM " + schema + ".fence_epoch_live");
  tx.exec("SELECT setval('" + schema + ".fence_seq', 1, false)");
  // The counter every mode draws from since version 10 (UNLOGGED: a promotion empties it).
  tx.exec("SELECT setval('" + schema + ".advisory_fence_seq', 1, false)");
}

// The fence of one hold of `name` of each kind through `c`, taken and given back in turn.
std::vector<std::uint64_t> one_of_each(client& c, const std::string& name) {
  std::vector<std::uint64_t> out;
  auto l = c.make_lock(name + "/x");
  EXPECT_TRUE(l.try_lock());
  out.push_back(l.fence());
  l.unlock();
  auto rw = c.make_shared_mutex(name + "/s");
  EXPECT_TRUE(rw.try_lock_shared());
  out.push_back(rw.fence());
  rw.unlock_shared();
  auto sem = c.make_semaphore(name + "/p", 2);
  auto p = sem.try_acquire();
  EXPECT_TRUE(p);
  if (p) out.push_back(p.fence());
  return out;
}

TEST_F(postgres, row_fences_rise_over_a_fence_sequence_that_went_back) {
  std::string schema = "sqlock_ep_" + random_token().substr(0, 8);
  schema_guard guard(owner_, schema);
  auto owner = pg::with(owner_, "schema=" + schema);
  sqlock::connect(pg::with(owner, "migrate=auto"));
  auto dc = dba();
  for (const char* mode : {"pessimistic", "optimistic"}) {
    auto c = sqlock::connect(pg::with(owner, std::string("mode=") + mode));
    auto name = unique_name(std::string("epoch-") + mode);
    std::uint64_t highest = 0;
    for (int round = 0; round < 3; ++round) {
      for (auto f : one_of_each(c, name)) {
        EXPECT_GT(f, highest) << mode << " round " << round;
        highest = std::max(highest, f);
      }
      promote_behind(dc, schema);
    }
  }
}

TEST_F(postgres, migrate_to_v7_keeps_row_fences_rising_with_a_hold_live) {
  std::string schema = "sqlock_v6_" + random_token().substr(0, 8);
  schema_guard guard(owner_, schema);
  const auto& b = sqlock::postgres::bundle();
  auto dc = dba();
  {
    pqxx::nontransaction tx(dc);
    for (const auto& f : b.migrations)
      if (sql::migration_version(f.name) <= 6) tx.exec(sqlock::postgres::render(f.text, schema));
  }
  auto name = unique_name("v6-hold");
  std::uint64_t old_fence = 0;
  {
    // A hold of a version-6 client: the bare sequence value as its fence.
    pqxx::nontransaction tx(dc);
    old_fence = tx.exec_params1("INSERT INTO " + schema +
                                    ".locks (name, owner, mode, fence, acquired_at, expires_at) "
                                    "VALUES ($1, 'v6-owner', 'pessimistic', nextval('" +
                                    schema +
                                    ".fence_seq'), now(), now() + interval '1 hour') "
                                    "RETURNING fence",
                                name)[0]
                    .as<std::uint64_t>();
  }
  auto owner = pg::with(owner_, "schema=" + schema);
  sqlock::connect(pg::with(owner, "migrate=auto"));
  auto c = sqlock::connect(pg::with(owner, "mode=pessimistic"));
  EXPECT_FALSE(c.make_lock(name).try_lock());  // the version-6 hold still counts
  EXPECT_TRUE(c.force_release(name));
  auto l = c.make_lock(name);
  ASSERT_TRUE(l.try_lock());
  EXPECT_GT(l.fence(), old_fence);
  l.unlock();
}

}  // namespace
}  // namespace sqlock::test
