// MySQL's row-based lock models (pessimistic, optimistic): lease rows on the server's clock,
// through the SQL engine over the driver (mysql_driver.hpp), with a bounded statement pool
// whose connections are kept.
#pragma once

#include <memory>
#include <string>

#include "sql/sql_engine.hpp"
#include "sqlock/backend.hpp"
#include "sqlock/mysql/mysql.hpp"

namespace sqlock::mysql::detail {

/// make_dialect(mode) with the encoding of the waiting requests' batches (the JSON library is
/// this module's, not the vendor-free dialect's).
sql::dialect lock_dialect(const std::string& mode);

/// The row backend for `o` (mode "pessimistic" or "optimistic"); `url_text` is shown redacted.
/// Its statement pool has `statements` connections, each counted in `counter`.
std::shared_ptr<backend> open_rows(const options& o, std::string url_text, std::size_t statements,
                                   std::shared_ptr<sql::connection_counter> counter);

}  // namespace sqlock::mysql::detail
