// compat=shedlock on PostgreSQL: ShedLock's PostgresSqlServerTimeStatementsSource (useDbTime)
// in this database's SQL; the rules are written once, in sql/shedlock_layout.hpp. Time is the
// database's: timezone('utc', CURRENT_TIMESTAMP), in the TIMESTAMP (without time zone) columns
// of ShedLock's DDL. The acquire is ShedLock's one upsert.
#include "shedlock.hpp"

#include "sql/shedlock_layout.hpp"

namespace sqlock::postgres {

namespace {

sql::shedlock_sql postgres_sql() {
  sql::shedlock_sql s;
  s.kind = "postgresql";
  s.now = "timezone('utc', CURRENT_TIMESTAMP)";
  s.lease_end = s.now + " + make_interval(secs => CAST(:lease_ms AS bigint) / 1000.0)";
  s.locked_by = "left(CAST(:holder AS text), 222) || ' ' || CAST(:owner AS text)";
  s.owned_by = [](const std::string& column) {
    const std::string owner = "CAST(:owner AS text)";
    return "right(" + column + ", length(" + owner + ") + 1) = ' ' || " + owner;
  };
  s.owner_of_row = "CASE WHEN locked_by ~ ' [0-9a-f]{32}$' THEN right(locked_by, 32) ELSE '' END";
  s.holder_of_row =
      "CASE WHEN locked_by ~ ' [0-9a-f]{32}$' THEN left(locked_by, -33) ELSE locked_by END";
  s.iso = [](const std::string& column) {
    return "to_char(" + column + ", 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')";
  };
  s.name_has_prefix = "left(name, length(CAST(:prefix AS text))) = CAST(:prefix AS text)";
  s.on_duplicate_name = [](const std::string& set, const std::string& when) {
    return " ON CONFLICT (name) DO UPDATE SET " + set + " WHERE " + when + " RETURNING 0";
  };
  s.applied = [](std::string update, std::string) {
    return std::vector<std::string>{std::move(update) + " RETURNING true"};
  };
  s.columns =
      "(name VARCHAR(64) NOT NULL, lock_until TIMESTAMP NOT NULL, locked_at TIMESTAMP NOT NULL, "
      "locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))";
  s.table_exists = [](const std::string& table) {
    return "SELECT 1 WHERE to_regclass('" + table + "') IS NOT NULL";
  };
  return s;
}

}  // namespace

sql::dialect shedlock_dialect(const std::string& table) {
  static const sql::shedlock_sql db = postgres_sql();
  return sql::shedlock_dialect(db, table);
}

}  // namespace sqlock::postgres
