// Five processes connecting with migrate=auto to a fresh schema at once (the replicas of a
// service starting together): all connect, the schema ends at the newest version, each version
// recorded once.
#include <gtest/gtest.h>

#include "backends/postgres/dialect.hpp"
#include "concurrent_connects.hpp"
#include "pg_env.hpp"

namespace sqlock::test {
namespace {

TEST_F(postgres, five_processes_connecting_with_migrate_auto_to_a_fresh_schema_all_connect) {
  const std::string schema = "sqlock_t_cm" + random_token().substr(0, 8);
  schema_guard guard(owner_, schema);
  EXPECT_EQ(connect_in_processes(pg::with(owner_, "schema=" + schema + "&migrate=auto"), 5), 5);
  const auto v = std::to_string(sql::latest_version(sqlock::postgres::bundle()));
  EXPECT_EQ(recorded_versions(pg::with(owner_, "schema=" + schema), schema + ".schema_version"),
            v + " " + v + " " + v);
}

}  // namespace
}  // namespace sqlock::test
