// compat=shedlock on MySQL/MariaDB beside ShedLock's own statements (tests/support/
// shedlock_statements.hpp).
#include "mysql_env.hpp"
#include "shedlock_statements.hpp"

namespace sqlock::test {
using shedlock::mysql::peer;

#define SQLOCK_MYSQL_URL_OR_SKIP() \
  std::string u;                   \
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_URL", u)

TEST(mysql_shedlock, peer_and_sqlock_exclude_each_other) {
  SQLOCK_MYSQL_URL_OR_SKIP();
  shedlock_both_ways(u, peer);
}

TEST(mysql_shedlock, at_least_leaves_lock_until_as_shedlock_does) {
  SQLOCK_MYSQL_URL_OR_SKIP();
  shedlock_at_least(u, peer);
}

TEST(mysql_shedlock, compat_config_errors) {
  SQLOCK_MYSQL_URL_OR_SKIP();
  shedlock_config_errors(u);
}

}  // namespace sqlock::test
