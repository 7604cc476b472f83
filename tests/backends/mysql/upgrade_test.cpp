// Upgrading a MySQL/MariaDB database from schema version 1 with a hold live, in the database
// SQLOCK_TEST_MYSQL_EMPTY_URL names (left empty again afterwards; the test runs alone): the
// hold a version-1 client took stays held through `migrate`, new clients are refused
// (exclusive, shared and permit alike), and its owner renews and releases it through the new
// library. And from version 4 to 5 (one name, one lock across modes) with an advisory hold and
// a row hold of version-4 clients live: each stays exclusive against the other side's new
// routines, and on MariaDB new fences exceed both old ones.
#include "backends/mysql/dialect.hpp"
#include "kinds_checks.hpp"
#include "mysql_env.hpp"
#include "sqlock/backend.hpp"
#include "sqlock/shared_mutex.hpp"

namespace sqlock::test {
namespace {

// Drops every table and routine of the database.
void empty_again(sql::engine_backend& b) {
  for (auto& r : query(b,
                       "SELECT routine_type, routine_name FROM information_schema.routines "
                       "WHERE routine_schema = DATABASE()"))
    query(b, "DROP " + *r[0] + " IF EXISTS `" + *r[1] + "`");
  for (auto& r : query(b,
                       "SELECT table_name FROM information_schema.tables "
                       "WHERE table_schema = DATABASE()"))
    query(b, "DROP TABLE IF EXISTS `" + *r[0] + "`");
}

TEST(mysql_upgrade, HoldTakenOnVersion1SurvivesTheMigration) {
  std::string empty;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_EMPTY_URL", empty);
  auto b = raw_backend(with_param(empty, "mode", "pessimistic"));
  empty_again(*b);
  const auto& v1 = mysql::sql_bundle().migrations.at(0);
  ASSERT_EQ(v1.name, "V001__locks.sql");
  b->with_connection([&](sql::connection& c) { c.execute_script(v1.text); });
  // What version 1's sqlock_acquire_pessimistic() leaves: the name's row with owner and fence.
  const std::string owner = random_token();
  query(*b, "UPDATE sqlock_counters SET value = value + 1 WHERE name = 'fence'");
  query(*b,
        "INSERT INTO sqlock_locks (name_key, name, owner, fence, version, acquired_at, "
        "expires_at, mode, holder) SELECT 'job', 'job', '" +
            owner +
            "', value, 1, "
            "UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL 60 SECOND, 'pessimistic', 'wave1' "
            "FROM sqlock_counters WHERE name = 'fence'");
  const auto fence = sql::decode_u64(query(*b, "SELECT fence FROM sqlock_locks")[0][0], "fence");

  EXPECT_EQ(b->migrate(), sql::latest_version(mysql::sql_bundle()));
  expect_hold_survived_upgrade(*b, "job", owner, fence);
  empty_again(*b);
}

// The one value a query returns ("NULL" for NULL).
std::string single(const sql::rows& r) {
  return r.empty() || r[0].empty() ? "" : r[0][0].value_or("NULL");
}

TEST(mysql_upgrade, Version4HoldsStayExclusiveAcrossModesThroughTheMigration) {
  std::string empty;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_EMPTY_URL", empty);
  auto b = raw_backend(with_param(empty, "mode", "pessimistic"));
  empty_again(*b);
  const auto& bundle = mysql::sql_bundle();
  b->with_connection([&](sql::connection& c) {
    for (const auto& m : bundle.migrations)
      if (sql::migration_version(m.name) <= 4) c.execute_script(m.text);
    c.execute_script(bundle.routine("00_functions.sql"));  // sqlock_key, sqlock_lock_name
  });
  const bool mariadb = sql::says_true(query(*b, "SELECT @@version LIKE '%MariaDB%'"));
  const auto row_name = unique_name("v4-row");
  const auto adv_name = unique_name("v4-advisory");
  // What version 4's pessimistic acquire leaves: the name's row, its fence from the counter row.
  query(*b, "UPDATE sqlock_counters SET value = value + 1 WHERE name = 'fence'");
  query(*b,
        "INSERT INTO sqlock_locks (name_key, name, owner, fence, version, acquired_at, "
        "expires_at, mode, holder) SELECT sqlock_key('" +
            row_name + "'), '" + row_name +
            "', 'v4-owner', value, 1, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL 60 SECOND, "
            "'pessimistic', 'v4' FROM sqlock_counters WHERE name = 'fence'");
  const auto row_fence = sql::decode_u64(
      query(*b, "SELECT fence FROM sqlock_locks WHERE name = '" + row_name + "'")[0][0], "fence");
  // What version 4's advisory pair leaves (MariaDB): a session holding the name's GET_LOCK lock
  // and its fence's, the fence (epoch << 40) + the sequence (MySQL 8: the counter row).
  auto holder = raw_backend(with_param(empty, "pool", "1"));
  std::uint64_t adv_fence = 0;
  if (mariadb) {
    query(*holder, "UPDATE sqlock_counters SET value = value + 1 WHERE name = 'fence_epoch'");
    query(*holder,
          "INSERT INTO sqlock_fence_epoch_live (id, epoch) SELECT 1, value FROM sqlock_counters "
          "WHERE name = 'fence_epoch'");
    adv_fence = sql::decode_u64(query(*holder,
                                      "SELECT (epoch << 40) + NEXTVAL(sqlock_fence_seq) FROM "
                                      "sqlock_fence_epoch_live WHERE id = 1")[0][0],
                                "fence");
  } else {
    query(*holder, "UPDATE sqlock_counters SET value = value + 1 WHERE name = 'fence'");
    adv_fence = sql::decode_u64(
        query(*holder, "SELECT value FROM sqlock_counters WHERE name = 'fence'")[0][0], "fence");
  }
  ASSERT_EQ(single(query(*holder, "SELECT GET_LOCK(sqlock_lock_name('" + adv_name + "'), 0)")),
            "1");
  query(*holder, "DO GET_LOCK(CONCAT('sqlock!', " + std::to_string(adv_fence) + "), 0)");

  EXPECT_EQ(b->migrate(), sql::latest_version(bundle));  // to version 5, the holds live
  std::uint64_t highest = std::max(row_fence, adv_fence);
  for (const char* mode : {"pessimistic", "optimistic", "advisory"}) {
    SCOPED_TRACE(mode);
    auto c = connect(with_param(empty, "mode", mode));
    EXPECT_FALSE(c.make_lock(row_name).try_lock());
    EXPECT_FALSE(c.make_lock(adv_name).try_lock());
    if (std::string(mode) != "advisory") {
      EXPECT_FALSE(c.make_shared_mutex(adv_name).try_lock_shared());
    }
    auto l = c.make_lock(unique_name("v5-fresh"));
    ASSERT_TRUE(l.try_lock());
    if (mariadb) {
      EXPECT_GT(l.fence(), highest);  // one source: above both old ones
      highest = std::max(highest, l.fence());
    }
  }
  // The old holders let go: the row's owner through the version-5 release, the advisory
  // session by closing. Then both names are free, with higher fences (MariaDB).
  EXPECT_EQ(single(query(*b, "CALL sqlock_release_pessimistic('" + row_name + "', 'v4-owner')")),
            "1");
  holder.reset();
  for (const char* mode : {"advisory", "pessimistic"}) {
    SCOPED_TRACE(mode);
    auto c = connect(with_param(empty, "mode", mode));
    for (const auto& name : {row_name, adv_name}) {
      auto l = c.make_lock(name);
      ASSERT_TRUE(l.try_lock_for(std::chrono::seconds(10)));
      if (mariadb) {
        EXPECT_GT(l.fence(), highest);
        highest = l.fence();
      }
      l.unlock();
    }
  }
  empty_again(*b);
}

}  // namespace
}  // namespace sqlock::test
