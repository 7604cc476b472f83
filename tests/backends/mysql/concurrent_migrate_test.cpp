// Five processes connecting with migrate=auto to a fresh database at once (the replicas of a
// service starting together): all connect, the schema ends at the newest version, each version
// recorded once. Before migrations were serialized by a named lock, most of them failed with
// "PROCEDURE ... already exists".
#include <gtest/gtest.h>

#include "backends/mysql/dialect.hpp"
#include "concurrent_connects.hpp"
#include "own_database.hpp"

namespace sqlock::test {
namespace {

TEST(mysql_migrate, five_processes_connecting_with_migrate_auto_to_a_fresh_database_all_connect) {
  std::string dba_url;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_DBA_URL", dba_url);
  own_database db(dba_url);
  EXPECT_EQ(connect_in_processes(db.dba() + "?migrate=auto", 5), 5);
  const auto v = std::to_string(sql::latest_version(mysql::sql_bundle()));
  EXPECT_EQ(recorded_versions(db.dba(), "sqlock_schema_version"), v + " " + v + " " + v);
}

}  // namespace
}  // namespace sqlock::test
