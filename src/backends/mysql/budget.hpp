// The connection budget of one MySQL/MariaDB client (URL `max_connections=`): advisory mode's
// lock sessions and waiters take theirs first, and the engine's statement pool gets the rest.
// The split itself is the SQL engine's (src/sql/connection_budget.hpp).
#pragma once

#include "sql/connection_budget.hpp"
#include "sqlock/mysql/mysql.hpp"

namespace sqlock::mysql {

/// Splits the budget of `o`; config_error when the parts do not fit.
sql::budget_split split_budget(const options& o);

}  // namespace sqlock::mysql
