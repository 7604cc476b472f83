// Internal seam between the backend (vendor-free) and the one file that includes
// mysql-connector-c++ headers (connector.cpp). The connector's `sql::` namespace never meets
// sqlock::sql outside that file.
#pragma once

#include <memory>

#include "sqlock/mysql/mysql.hpp"
#include "sqlock/sql_engine.hpp"

namespace sqlock::mysql::detail {

/// Opens one connection (autocommit, utf8mb4, no auto-reconnect). Throws connection_error when
/// the server cannot be reached, config_error for bad credentials or an unknown database.
std::unique_ptr<sql::connection> open_connection(const options& o);

}  // namespace sqlock::mysql::detail
