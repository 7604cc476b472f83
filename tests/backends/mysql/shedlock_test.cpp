// compat=shedlock on MySQL/MariaDB beside ShedLock's own statements. The peer's SQL below is
// what ShedLock's JdbcTemplateStorageAccessor sends with useDbTime, from
// providers/sql/shedlock-sql-support/.../MySqlServerTimeStatementsSource.java
// (github.com/lukas-krecan/ShedLock): getInsertStatement (INSERT IGNORE), getUpdateStatement
// (where lock_until <= now), getUnlockStatement (lock_until = max(locked_at + lockAtLeastFor,
// now)); now = UTC_TIMESTAMP(3).
#include "mysql_env.hpp"
#include "shedlock_peer.hpp"

namespace sqlock::test {
namespace {

const std::string now = "UTC_TIMESTAMP(3)";

std::vector<std::string> lock(const std::string& t, const std::string& n, int ms) {
  const auto until = "TIMESTAMPADD(MICROSECOND, " + std::to_string(ms * 1000LL) + ", " + now + ")";
  return {"INSERT IGNORE INTO " + t + "(name, lock_until, locked_at, locked_by) VALUES(" + n +
              ", " + until + ", " + now + ", 'java-host')",
          "UPDATE " + t + " SET lock_until = " + until + ", locked_at = " + now +
              ", locked_by = 'java-host' WHERE name = " + n + " AND lock_until <= " + now};
}

std::string unlock(const std::string& t, const std::string& n) {
  const std::string at_least = "TIMESTAMPADD(MICROSECOND, 0, locked_at)";
  return "UPDATE " + t + " SET lock_until = IF (" + at_least + " > " + now + " , " + at_least +
         ", " + now + ") WHERE name = " + n + " AND locked_by = 'java-host'";
}

std::string row(const std::string& t, const std::string& n) {
  return "SELECT locked_by, TIMESTAMPDIFF(MICROSECOND, locked_at, lock_until) DIV 1000, "
         "TIMESTAMPDIFF(MICROSECOND, " +
         now + ", lock_until) DIV 1000 FROM " + t + " WHERE name = " + n;
}

const shedlock_sql peer{lock, unlock, row};

}  // namespace

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
