// Shared and permit holds of the MySQL/MariaDB row modes: the row_kinds suite as the migrating
// user and as the EXECUTE-only user.
#include "mysql_env.hpp"
#include "row_kinds_suite.hpp"

namespace sqlock::test {
namespace {

std::string kinds_url(const char* var, const char* mode) {
  auto admin = env("SQLOCK_TEST_MYSQL_URL");
  auto url = env(var);
  if (admin.empty() || url.empty()) return {};
  ensure_mysql_schema(admin);
  return with_param(url, "mode", mode);
}

INSTANTIATE_TEST_SUITE_P(
    mysql, row_kinds,
    ::testing::Values(
        kinds_target{"pessimistic",
                     [] { return kinds_url("SQLOCK_TEST_MYSQL_URL", "pessimistic"); }, 6},
        kinds_target{"optimistic", [] { return kinds_url("SQLOCK_TEST_MYSQL_URL", "optimistic"); },
                     6},
        kinds_target{"exec_pessimistic",
                     [] { return kinds_url("SQLOCK_TEST_MYSQL_EXEC_URL", "pessimistic"); }, 4}),
    kinds_label);

}  // namespace
}  // namespace sqlock::test
