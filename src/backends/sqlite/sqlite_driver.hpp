// The SQLite driver of the shared SQL engine (sqlite_driver.cpp): a connection to one database
// file. No vendor header is included here.
#pragma once

#include <memory>
#include <string>

#include "sql/connection.hpp"
#include "sql/connection_counter.hpp"

namespace sqlock::sqlite::detail {

/// Opens the database file `path` (created when absent, switched to WAL); waits for another
/// writer at most `busy_timeout` (less when a call's deadline is nearer); counts itself in
/// `counter` while open. config_error when the file cannot be opened.
std::unique_ptr<sql::connection> connect(const std::string& path, milliseconds busy_timeout,
                                         std::shared_ptr<sql::connection_counter> counter);

}  // namespace sqlock::sqlite::detail
