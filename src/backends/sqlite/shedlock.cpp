// compat=shedlock on SQLite: the rules of ShedLock's SqlStatementsSource (providers/sql/
// shedlock-sql-support in github.com/lukas-krecan/ShedLock), written for sqlock's engine.
// ShedLock has no useDbTime for SQLite: its JDBC provider binds the client's time, which the
// SQLite JDBC driver stores by default as integer milliseconds since the Unix epoch (UTC). This
// layout does the same with the machine's wall clock (every client of a SQLite file runs on
// one machine) instead of the boot clock sqlock's own schema uses.
//   acquire  INSERT OR IGNORE; then update where lock_until <= now (one transaction)
//   renew    ShedLock's extend: update where name, locked_by and lock_until > now
//   release  ShedLock's unlock with lockAtLeastFor 0: lock_until = max(locked_at, now); the
//            row is kept (run_exclusive's at_least shortens the lease by a renew instead)
// locked_by is "<holder> <owner token>": owner-checked like ShedLock's hostname, and a retry of
// a lost acquire by the same owner finds its own row (sqlock's one addition to the rules).
#include "shedlock.hpp"

namespace sqlock::sqlite {

namespace {

// SQLite's 'now' is whole milliseconds of the wall clock; julianday() returns them as a
// fraction of a day, so the product is rounded back rather than truncated.
const std::string now = "CAST(ROUND((julianday('now') - 2440587.5) * 86400000) AS INTEGER)";
const std::string until = "(" + now + " + :lease_ms)";
const std::string locked_by = "substr(substr(:holder, 1, 222) || ' ' || :owner, 1, 255)";
const std::string mine = "substr(locked_by, -(length(:owner) + 1)) = ' ' || :owner";
const std::string iso = "strftime('%Y-%m-%dT%H:%M:%fZ', ";

sql::operation op(std::string key, std::vector<std::string> statements) {
  return {"shedlock_" + std::move(key), std::move(statements)};
}

}  // namespace

sql::dialect shedlock_dialect(const std::string& table) {
  sql::check_table_name(table, "shedlock_table");
  const std::string& t = table;
  sql::dialect d;
  d.kind = "sqlite";
  d.mode = "shedlock";
  d.acquire = op(
      "acquire",
      {"INSERT OR IGNORE INTO " + t + "(name, lock_until, locked_at, locked_by) VALUES(:name, " +
           until + ", " + now + ", " + locked_by + ")",
       "UPDATE " + t + " SET lock_until = " + until + ", locked_at = " + now + ", locked_by = " +
           locked_by + " WHERE name = :name AND (" + "lock_until <= " + now + " OR " + mine + ")",
       "SELECT 0 FROM " + t + " WHERE name = :name AND " + mine + " AND lock_until > " + now});
  d.renew = op("renew", {"UPDATE " + t + " SET lock_until = " + until + " WHERE name = :name AND " +
                         mine + " AND lock_until > " + now + " RETURNING 1"});
  d.release = op("release", {"UPDATE " + t + " SET lock_until = max(locked_at, " + now +
                             ") WHERE name = :name AND " + mine + " RETURNING 1"});
  d.list =
      op("list", {"SELECT name, CASE WHEN length(locked_by) > 32 AND substr(locked_by, -33, 1) "
                  "= ' ' THEN substr(locked_by, -32) ELSE '' END, NULL, " +
                  iso + "locked_at / 1000.0, 'unixepoch'), " + iso +
                  "lock_until / 1000.0, 'unixepoch'), 'shedlock', locked_by FROM " + t +
                  " WHERE lock_until > " + now +
                  " AND substr(name, 1, length(:prefix)) = :prefix ORDER BY name"});
  d.force_release =
      op("force_release", {"UPDATE " + t + " SET lock_until = " + now +
                           " WHERE name = :name AND lock_until > " + now + " RETURNING 1"});
  d.layout_table = t;
  d.layout_ddl = "CREATE TABLE IF NOT EXISTS " + t +
                 "(name VARCHAR(64) NOT NULL PRIMARY KEY, lock_until TIMESTAMP NOT NULL, "
                 "locked_at TIMESTAMP NOT NULL, locked_by VARCHAR(255) NOT NULL);\n";
  d.layout_check = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '" + t + "'";
  d.max_name_chars = 64;
  return d;
}

}  // namespace sqlock::sqlite
