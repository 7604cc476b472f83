// compat=shedlock on MySQL/MariaDB: the rules of ShedLock's MySqlServerTimeStatementsSource
// (useDbTime; providers/sql/shedlock-sql-support in github.com/lukas-krecan/ShedLock), written
// for sqlock's engine. Time is the database's: UTC_TIMESTAMP(3), in the TIMESTAMP(3) columns of
// ShedLock's DDL (so every client of the table must use one session time_zone, as ShedLock's
// own instances must).
//   acquire  INSERT IGNORE; then update where lock_until <= now (one transaction)
//   renew    ShedLock's extend: update where name, locked_by and lock_until > now
//   release  ShedLock's unlock with lockAtLeastFor 0: lock_until = max(locked_at, now); the
//            row is kept (run_exclusive's at_least shortens the lease by a renew instead)
// locked_by is "<holder> <owner token>": owner-checked like ShedLock's hostname, and a retry of
// a lost acquire by the same owner finds its own row (sqlock's one addition to the rules).
#include "shedlock.hpp"

namespace sqlock::mysql {

namespace {

const std::string now = "UTC_TIMESTAMP(3)";
const std::string until = "TIMESTAMPADD(MICROSECOND, :lease_ms * 1000, " + now + ")";
const std::string locked_by = "LEFT(CONCAT(LEFT(:holder, 222), ' ', :owner), 255)";
const std::string mine = "RIGHT(locked_by, CHAR_LENGTH(:owner) + 1) = CONCAT(' ', :owner)";
const std::string iso = "'%Y-%m-%dT%H:%i:%s.%fZ'";

sql::operation op(std::string key, std::vector<std::string> statements) {
  return {"shedlock_" + std::move(key), std::move(statements)};
}

}  // namespace

sql::dialect shedlock_dialect(const std::string& table) {
  sql::check_table_name(table, "shedlock_table");
  const std::string& t = table;
  const std::string held =
      "SELECT 1 FROM " + t + " WHERE name = :name AND " + mine + " AND lock_until > " + now;
  sql::dialect d;
  d.kind = "mysql";
  d.mode = "shedlock";
  d.acquire = op("acquire", {"INSERT IGNORE INTO " + t +
                                 "(name, lock_until, locked_at, locked_by) VALUES(:name, " + until +
                                 ", " + now + ", " + locked_by + ")",
                             "UPDATE " + t + " SET lock_until = " + until + ", locked_at = " + now +
                                 ", locked_by = " + locked_by + " WHERE name = :name AND (" +
                                 "lock_until <= " + now + " OR " + mine + ")",
                             held});
  d.renew = op("renew", {"UPDATE " + t + " SET lock_until = " + until + " WHERE name = :name AND " +
                             mine + " AND lock_until > " + now,
                         held});
  d.release = op("release", {"UPDATE " + t + " SET lock_until = IF(locked_at > " + now +
                                 ", locked_at, " + now + ") WHERE name = :name AND " + mine,
                             "SELECT ROW_COUNT() > 0"});
  d.list = op("list", {"SELECT name, IF(locked_by REGEXP ' [0-9a-f]{32}$', RIGHT(locked_by, 32), "
                       "''), NULL, DATE_FORMAT(locked_at, " +
                       iso + "), DATE_FORMAT(lock_until, " + iso +
                       "), 'shedlock', locked_by FROM " + t + " WHERE lock_until > " + now +
                       " AND LEFT(name, CHAR_LENGTH(:prefix)) = :prefix ORDER BY name"});
  d.force_release = op("force_release", {"UPDATE " + t + " SET lock_until = " + now +
                                             " WHERE name = :name AND lock_until > " + now,
                                         "SELECT ROW_COUNT() > 0"});
  const auto dot = t.find('.');
  const std::string schema = dot == std::string::npos ? "DATABASE()" : "'" + t.substr(0, dot) + "'";
  const std::string name = dot == std::string::npos ? t : t.substr(dot + 1);
  d.layout_table = t;
  d.layout_ddl = "CREATE TABLE IF NOT EXISTS " + t +
                 "(name VARCHAR(64) NOT NULL, lock_until TIMESTAMP(3) NOT NULL, locked_at "
                 "TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3), locked_by VARCHAR(255) NOT "
                 "NULL, PRIMARY KEY (name));\n";
  d.layout_check = "SELECT 1 FROM information_schema.tables WHERE table_schema = " + schema +
                   " AND table_name = '" + name + "'";
  d.max_name_chars = 64;
  return d;
}

}  // namespace sqlock::mysql
