// `sqlock doctor` for SQLite (sqlock/doctor.hpp): the file, its journal mode, the file system
// it is on (SQLite's locking is for one machine: a network file system does not exclude), and
// the schema version.
#pragma once

#include <string>

#include "sql/sql_engine.hpp"
#include "sqlock/doctor.hpp"

namespace sqlock::sqlite::detail {

/// The checks of one SQLite backend (`engine`, which owns it) on the file `path`.
class sqlite_diagnostics final : public store_diagnostics {
 public:
  sqlite_diagnostics(sql::engine_backend& engine, std::string path)
      : engine_(engine), path_(std::move(path)) {}
  std::vector<finding> check(steady_time deadline) override;

 private:
  sql::engine_backend& engine_;
  const std::string path_;
};

}  // namespace sqlock::sqlite::detail
