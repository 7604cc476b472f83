// compat=shedlock on MySQL/MariaDB: ShedLock's MySqlServerTimeStatementsSource (useDbTime) in
// this database's SQL; the rules are written once, in sql/shedlock_layout.hpp. Time is the
// database's: UTC_TIMESTAMP(3), in the TIMESTAMP(3) columns of ShedLock's DDL (so every client
// of the table must use one session time_zone, as ShedLock's own instances must).
#include "shedlock.hpp"

#include "sql/shedlock_layout.hpp"

namespace sqlock::mysql {

namespace {

sql::shedlock_sql mysql_sql() {
  sql::shedlock_sql s;
  s.kind = "mysql";
  s.now = "UTC_TIMESTAMP(3)";
  s.lease_end = "TIMESTAMPADD(MICROSECOND, :lease_ms * 1000, " + s.now + ")";
  s.locked_by = "LEFT(CONCAT(LEFT(:holder, 222), ' ', :owner), 255)";
  s.owned_by = [](const std::string& column) {
    return "RIGHT(" + column + ", CHAR_LENGTH(:owner) + 1) = CONCAT(' ', :owner)";
  };
  s.owner_of_row = "IF(locked_by REGEXP ' [0-9a-f]{32}$', RIGHT(locked_by, 32), '')";
  s.holder_of_row =
      "IF(locked_by REGEXP ' [0-9a-f]{32}$', LEFT(locked_by, CHAR_LENGTH(locked_by) - 33), "
      "locked_by)";
  s.iso = [](const std::string& column) {
    return "DATE_FORMAT(" + column + ", '%Y-%m-%dT%H:%i:%s.%fZ')";
  };
  s.name_has_prefix = "LEFT(name, CHAR_LENGTH(:prefix)) = :prefix";
  s.insert_ignore = "INSERT IGNORE";
  s.applied = [](std::string update, std::string confirm) {
    return std::vector<std::string>{
        std::move(update), confirm.empty() ? "SELECT ROW_COUNT() > 0" : std::move(confirm)};
  };
  s.columns =
      "(name VARCHAR(64) NOT NULL, lock_until TIMESTAMP(3) NOT NULL, locked_at TIMESTAMP(3) NOT "
      "NULL DEFAULT CURRENT_TIMESTAMP(3), locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))";
  s.table_exists = [](const std::string& table) {
    const auto dot = table.find('.');
    const std::string schema =
        dot == std::string::npos ? "DATABASE()" : "'" + table.substr(0, dot) + "'";
    const std::string name = dot == std::string::npos ? table : table.substr(dot + 1);
    return "SELECT 1 FROM information_schema.tables WHERE table_schema = " + schema +
           " AND table_name = '" + name + "'";
  };
  return s;
}

}  // namespace

sql::dialect shedlock_dialect(const std::string& table) {
  static const sql::shedlock_sql db = mysql_sql();
  return sql::shedlock_dialect(db, table);
}

}  // namespace sqlock::mysql
