// compat=shedlock on SQLite: ShedLock's SqlStatementsSource in this database's SQL; the rules
// are written once, in sql/shedlock_layout.hpp. ShedLock has no useDbTime for SQLite: its JDBC
// provider binds the client's time, which the SQLite JDBC driver stores by default as integer
// milliseconds since the Unix epoch (UTC). This layout does the same with the machine's wall
// clock (every client of a SQLite file runs on one machine) instead of the boot clock sqlock's
// own schema uses.
#include "shedlock.hpp"

#include "sql/shedlock_layout.hpp"

namespace sqlock::sqlite {

namespace {

sql::shedlock_sql sqlite_sql() {
  sql::shedlock_sql s;
  s.kind = "sqlite";
  // SQLite's 'now' is whole milliseconds of the wall clock; julianday() returns them as a
  // fraction of a day, so the product is rounded back rather than truncated.
  s.now = "CAST(ROUND((julianday('now') - 2440587.5) * 86400000) AS INTEGER)";
  s.lease_end = "(" + s.now + " + :lease_ms)";
  s.locked_by = "substr(substr(:holder, 1, 222) || ' ' || :owner, 1, 255)";
  s.owned_by = [](const std::string& column) {
    return "substr(" + column + ", -(length(:owner) + 1)) = ' ' || :owner";
  };
  s.owner_of_row =
      "CASE WHEN length(locked_by) > 32 AND substr(locked_by, -33, 1) = ' ' THEN "
      "substr(locked_by, -32) ELSE '' END";
  s.holder_of_row =
      "CASE WHEN length(locked_by) > 32 AND substr(locked_by, -33, 1) = ' ' THEN "
      "substr(locked_by, 1, length(locked_by) - 33) ELSE locked_by END";
  s.iso = [](const std::string& column) {
    return "strftime('%Y-%m-%dT%H:%M:%fZ', " + column + " / 1000.0, 'unixepoch')";
  };
  s.name_has_prefix = "substr(name, 1, length(:prefix)) = :prefix";
  s.insert_ignore = "INSERT OR IGNORE";
  s.applied = [](std::string update, std::string) {
    return std::vector<std::string>{std::move(update) + " RETURNING 1"};
  };
  s.columns =
      "(name VARCHAR(64) NOT NULL PRIMARY KEY, lock_until TIMESTAMP NOT NULL, locked_at "
      "TIMESTAMP NOT NULL, locked_by VARCHAR(255) NOT NULL)";
  s.table_exists = [](const std::string& table) {
    return "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '" + table + "'";
  };
  return s;
}

}  // namespace

sql::dialect shedlock_dialect(const std::string& table) {
  static const sql::shedlock_sql db = sqlite_sql();
  return sql::shedlock_dialect(db, table);
}

}  // namespace sqlock::sqlite
