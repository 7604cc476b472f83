// compat=shedlock on PostgreSQL: the rules of ShedLock's PostgresSqlServerTimeStatementsSource
// (useDbTime; providers/sql/shedlock-sql-support in github.com/lukas-krecan/ShedLock), written
// for sqlock's engine. Time is the database's: timezone('utc', CURRENT_TIMESTAMP), in the
// TIMESTAMP (without time zone) columns of ShedLock's DDL.
//   acquire  insert; on a duplicate name, update where lock_until <= now (one statement)
//   renew    ShedLock's extend: update where name, locked_by and lock_until > now
//   release  ShedLock's unlock with lockAtLeastFor 0: lock_until = max(locked_at, now); the
//            row is kept (run_exclusive's at_least shortens the lease by a renew instead)
// locked_by is "<holder> <owner token>": owner-checked like ShedLock's hostname, and a retry of
// a lost acquire by the same owner finds its own row (sqlock's one addition to the rules).
#include "shedlock.hpp"

namespace sqlock::postgres {

namespace {

const std::string now = "timezone('utc', CURRENT_TIMESTAMP)";
const std::string until = now + " + make_interval(secs => CAST(:lease_ms AS bigint) / 1000.0)";
const std::string locked_by = "left(CAST(:holder AS text), 222) || ' ' || CAST(:owner AS text)";
const std::string owner = "CAST(:owner AS text)";
const std::string mine = "right(locked_by, length(" + owner + ") + 1) = ' ' || " + owner;
const std::string iso = "'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'";

sql::operation op(std::string key, std::string text) {
  return {"shedlock_" + std::move(key), {std::move(text)}};
}

}  // namespace

sql::dialect shedlock_dialect(const std::string& table) {
  sql::check_table_name(table, "shedlock_table");
  const std::string& t = table;
  const std::string t_mine =
      "right(" + t + ".locked_by, length(" + owner + ") + 1) = ' ' || " + owner;
  sql::dialect d;
  d.kind = "postgresql";
  d.mode = "shedlock";
  d.acquire =
      op("acquire", "INSERT INTO " + t + "(name, lock_until, locked_at, locked_by) VALUES(" +
                        ":name, " + until + ", " + now + ", " + locked_by +
                        ") ON CONFLICT (name) DO UPDATE SET lock_until = " + until +
                        ", locked_at = " + now + ", locked_by = " + locked_by + " WHERE " + t +
                        ".name = :name AND (" + t + ".lock_until <= " + now + " OR " + t_mine +
                        ") RETURNING 0");
  d.renew = op("renew", "UPDATE " + t + " SET lock_until = " + until + " WHERE name = :name AND " +
                            mine + " AND lock_until > " + now + " RETURNING true");
  d.release = op("release", "UPDATE " + t + " SET lock_until = CASE WHEN locked_at > " + now +
                                " THEN locked_at ELSE " + now + " END WHERE name = :name AND " +
                                mine + " RETURNING true");
  d.list = op(
      "list",
      "SELECT name, CASE WHEN locked_by ~ ' [0-9a-f]{32}$' THEN right(locked_by, "
      "32) ELSE '' END, NULL, to_char(locked_at, " +
          iso + "), to_char(lock_until, " + iso + "), 'shedlock', locked_by FROM " + t +
          " WHERE lock_until > " + now +
          " AND left(name, length(CAST(:prefix AS text))) = CAST(:prefix AS text) ORDER BY name");
  d.force_release =
      op("force_release", "UPDATE " + t + " SET lock_until = " + now +
                              " WHERE name = :name AND lock_until > " + now + " RETURNING true");
  d.layout_table = t;
  d.layout_ddl = "CREATE TABLE IF NOT EXISTS " + t +
                 "(name VARCHAR(64) NOT NULL, lock_until TIMESTAMP NOT NULL, locked_at TIMESTAMP "
                 "NOT NULL, locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name));\n";
  d.layout_check = "SELECT 1 WHERE to_regclass('" + t + "') IS NOT NULL";
  d.max_name_chars = 64;
  return d;
}

}  // namespace sqlock::postgres
