// Upgrading a MySQL/MariaDB database from schema version 1 with a hold live, in the database
// SQLOCK_TEST_MYSQL_EMPTY_URL names (left empty again afterwards; the test runs alone): the
// hold a version-1 client took stays held through `migrate`, new clients are refused
// (exclusive, shared and permit alike), and its owner renews and releases it through the new
// library.
#include "kinds_checks.hpp"
#include "mysql_env.hpp"
#include "sqlock/mysql/dialect.hpp"

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

}  // namespace
}  // namespace sqlock::test
