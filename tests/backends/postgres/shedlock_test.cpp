// compat=shedlock on PostgreSQL beside ShedLock's own statements. The peer's SQL below is what
// ShedLock's JdbcTemplateStorageAccessor sends with useDbTime, from
// providers/sql/shedlock-sql-support/.../PostgresSqlServerTimeStatementsSource.java
// (github.com/lukas-krecan/ShedLock): getInsertStatement (insert, on conflict update where
// lock_until <= now), getUpdateStatement, getUnlockStatement (lock_until = max(locked_at +
// lockAtLeastFor, now)); now = timezone('utc', CURRENT_TIMESTAMP).
#include "pg_env.hpp"
#include "shedlock_peer.hpp"

namespace sqlock::test {
namespace {

const std::string now = "timezone('utc', CURRENT_TIMESTAMP)";

std::vector<std::string> lock(const std::string& t, const std::string& n, int ms) {
  const auto until = now + " + make_interval(secs => " + std::to_string(ms / 1000.0) + ")";
  const auto set = " SET lock_until = " + until + ", locked_at = " + now +
                   ", locked_by = 'java-host' WHERE " + t + ".name = " + n + " AND " + t +
                   ".lock_until <= " + now;
  return {"INSERT INTO " + t + "(name, lock_until, locked_at, locked_by) VALUES(" + n + ", " +
              until + ", " + now + ", 'java-host') ON CONFLICT (name) DO UPDATE" + set,
          "UPDATE " + t + set};
}

std::string unlock(const std::string& t, const std::string& n) {
  const auto at_least = "locked_at + make_interval(secs => 0)";
  return "UPDATE " + t + " SET lock_until = CASE WHEN " + at_least + " > " + now + " THEN " +
         at_least + " ELSE " + now + " END WHERE name = " + n + " AND locked_by = 'java-host'";
}

std::string row(const std::string& t, const std::string& n) {
  return "SELECT locked_by, (EXTRACT(EPOCH FROM lock_until - locked_at) * 1000)::bigint, "
         "(EXTRACT(EPOCH FROM lock_until - " +
         now + ") * 1000)::bigint FROM " + t + " WHERE name = " + n;
}

const shedlock_sql peer{lock, unlock, row};

}  // namespace

TEST_F(postgres, shedlock_peer_and_sqlock_exclude_each_other) {
  shedlock_both_ways(owner_, peer);
}

TEST_F(postgres, shedlock_at_least_leaves_lock_until_as_shedlock_does) {
  shedlock_at_least(owner_, peer);
}

TEST_F(postgres, shedlock_compat_config_errors) {
  shedlock_config_errors(owner_);
}

}  // namespace sqlock::test
