// compat=shedlock on MySQL/MariaDB: ShedLock's table (shedlock(name, lock_until, locked_at,
// locked_by)) and its JdbcTemplate provider's statements with useDbTime, as the engine's dialect.
#pragma once

#include <string>

#include "sql/sql_dialect.hpp"

namespace sqlock::mysql {

/// The engine dialect of ShedLock's table `table` (checked: sql::check_table_name).
sql::dialect shedlock_dialect(const std::string& table);

}  // namespace sqlock::mysql
