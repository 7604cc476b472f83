// ShedLock's own statements on each SQL database (the peer of the compat=shedlock tests), shared
// by the native backends' tests and SOCI's. Each namespace names the ShedLock source its
// statements come from.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "shedlock_peer.hpp"

namespace sqlock::test::shedlock {

// PostgreSQL: what ShedLock's JdbcTemplateStorageAccessor sends with useDbTime, from
// providers/sql/shedlock-sql-support/.../PostgresSqlServerTimeStatementsSource.java
// (github.com/lukas-krecan/ShedLock): getInsertStatement (insert, on conflict update where
// lock_until <= now), getUpdateStatement, getUnlockStatement (lock_until = max(locked_at +
// lockAtLeastFor, now)); now = timezone('utc', CURRENT_TIMESTAMP).
namespace postgres {

inline const std::string now = "timezone('utc', CURRENT_TIMESTAMP)";

inline std::vector<std::string> lock(const std::string& t, const std::string& n, int ms) {
  const auto until = now + " + make_interval(secs => " + std::to_string(ms / 1000.0) + ")";
  const auto set = " SET lock_until = " + until + ", locked_at = " + now +
                   ", locked_by = 'java-host' WHERE " + t + ".name = " + n + " AND " + t +
                   ".lock_until <= " + now;
  return {"INSERT INTO " + t + "(name, lock_until, locked_at, locked_by) VALUES(" + n + ", " +
              until + ", " + now + ", 'java-host') ON CONFLICT (name) DO UPDATE" + set,
          "UPDATE " + t + set};
}

inline std::string unlock(const std::string& t, const std::string& n) {
  const auto at_least = "locked_at + make_interval(secs => 0)";
  return "UPDATE " + t + " SET lock_until = CASE WHEN " + at_least + " > " + now + " THEN " +
         at_least + " ELSE " + now + " END WHERE name = " + n + " AND locked_by = 'java-host'";
}

inline std::string row(const std::string& t, const std::string& n) {
  return "SELECT locked_by, (EXTRACT(EPOCH FROM lock_until - locked_at) * 1000)::bigint, "
         "(EXTRACT(EPOCH FROM lock_until - " +
         now + ") * 1000)::bigint FROM " + t + " WHERE name = " + n;
}

inline const shedlock_sql peer{lock, unlock, row};

}  // namespace postgres

// MySQL/MariaDB: what ShedLock's JdbcTemplateStorageAccessor sends with useDbTime, from
// providers/sql/shedlock-sql-support/.../MySqlServerTimeStatementsSource.java
// (github.com/lukas-krecan/ShedLock): getInsertStatement (INSERT IGNORE), getUpdateStatement
// (where lock_until <= now), getUnlockStatement (lock_until = max(locked_at + lockAtLeastFor,
// now)); now = UTC_TIMESTAMP(3).
namespace mysql {

inline const std::string now = "UTC_TIMESTAMP(3)";

inline std::vector<std::string> lock(const std::string& t, const std::string& n, int ms) {
  const auto until = "TIMESTAMPADD(MICROSECOND, " + std::to_string(ms * 1000LL) + ", " + now + ")";
  return {"INSERT IGNORE INTO " + t + "(name, lock_until, locked_at, locked_by) VALUES(" + n +
              ", " + until + ", " + now + ", 'java-host')",
          "UPDATE " + t + " SET lock_until = " + until + ", locked_at = " + now +
              ", locked_by = 'java-host' WHERE name = " + n + " AND lock_until <= " + now};
}

inline std::string unlock(const std::string& t, const std::string& n) {
  const std::string at_least = "TIMESTAMPADD(MICROSECOND, 0, locked_at)";
  return "UPDATE " + t + " SET lock_until = IF (" + at_least + " > " + now + " , " + at_least +
         ", " + now + ") WHERE name = " + n + " AND locked_by = 'java-host'";
}

inline std::string row(const std::string& t, const std::string& n) {
  return "SELECT locked_by, TIMESTAMPDIFF(MICROSECOND, locked_at, lock_until) DIV 1000, "
         "TIMESTAMPDIFF(MICROSECOND, " +
         now + ", lock_until) DIV 1000 FROM " + t + " WHERE name = " + n;
}

inline const shedlock_sql peer{lock, unlock, row};

}  // namespace mysql

// SQLite: ShedLock has no useDbTime for SQLite; the peer's SQL is its generic
// SqlStatementsSource.java (providers/sql/shedlock-sql-support, github.com/lukas-krecan/ShedLock):
// insert, update where lock_until <= :now, unlock setting lock_until = :unlockTime
// (LockConfiguration.getUnlockTime(): max(createdAt + lockAtLeastFor, now)), with the client's time
// bound as the SQLite JDBC driver stores it by default: integer milliseconds since the Unix epoch.
namespace sqlite {

inline std::string now_ms() {
  using namespace std::chrono;
  return std::to_string(
      duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count());
}

inline std::vector<std::string> lock(const std::string& t, const std::string& n, int ms) {
  const auto now = now_ms(), until = now + " + " + std::to_string(ms);
  return {"INSERT INTO " + t + "(name, lock_until, locked_at, locked_by) VALUES(" + n + ", " +
              until + ", " + now + ", 'java-host')",
          "UPDATE " + t + " SET lock_until = " + until + ", locked_at = " + now +
              ", locked_by = 'java-host' WHERE name = " + n + " AND lock_until <= " + now};
}

inline std::string unlock(const std::string& t, const std::string& n) {
  return "UPDATE " + t + " SET lock_until = " + now_ms() + " WHERE name = " + n +
         " AND locked_by = 'java-host'";
}

inline std::string row(const std::string& t, const std::string& n) {
  return "SELECT locked_by, lock_until - locked_at, lock_until - " + now_ms() + " FROM " + t +
         " WHERE name = " + n;
}

inline const shedlock_sql peer{lock, unlock, row};

}  // namespace sqlite

}  // namespace sqlock::test::shedlock
