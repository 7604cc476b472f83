// compat=shedlock on SQLite beside ShedLock's own statements. ShedLock has no useDbTime for
// SQLite: the peer's SQL below is its generic SqlStatementsSource.java
// (providers/sql/shedlock-sql-support, github.com/lukas-krecan/ShedLock): insert, update where
// lock_until <= :now, unlock setting lock_until = :unlockTime (LockConfiguration.getUnlockTime():
// max(createdAt + lockAtLeastFor, now)), with the client's time bound as the SQLite JDBC driver
// stores it by default: integer milliseconds since the Unix epoch.
#include <chrono>

#include "shedlock_peer.hpp"

namespace sqlock::test {
namespace {

std::string now_ms() {
  using namespace std::chrono;
  return std::to_string(
      duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count());
}

std::vector<std::string> lock(const std::string& t, const std::string& n, int ms) {
  const auto now = now_ms(), until = now + " + " + std::to_string(ms);
  return {"INSERT INTO " + t + "(name, lock_until, locked_at, locked_by) VALUES(" + n + ", " +
              until + ", " + now + ", 'java-host')",
          "UPDATE " + t + " SET lock_until = " + until + ", locked_at = " + now +
              ", locked_by = 'java-host' WHERE name = " + n + " AND lock_until <= " + now};
}

std::string unlock(const std::string& t, const std::string& n) {
  return "UPDATE " + t + " SET lock_until = " + now_ms() + " WHERE name = " + n +
         " AND locked_by = 'java-host'";
}

std::string row(const std::string& t, const std::string& n) {
  return "SELECT locked_by, lock_until - locked_at, lock_until - " + now_ms() + " FROM " + t +
         " WHERE name = " + n;
}

const shedlock_sql peer{lock, unlock, row};

}  // namespace

TEST(sqlite_shedlock, peer_and_sqlock_exclude_each_other) {
  temp_dir d;
  shedlock_both_ways("sqlite:" + (d.path / "s.db").string(), peer);
}

TEST(sqlite_shedlock, at_least_leaves_lock_until_as_shedlock_does) {
  temp_dir d;
  shedlock_at_least("sqlite:" + (d.path / "s.db").string(), peer);
}

TEST(sqlite_shedlock, compat_config_errors) {
  temp_dir d;
  shedlock_config_errors("sqlite:" + (d.path / "s.db").string());
}

}  // namespace sqlock::test
