// `sqlock doctor` for MySQL/MariaDB (sqlock/doctor.hpp), run through the backend's pool.
#pragma once

#include <optional>
#include <string>

#include "sql/sql_engine.hpp"
#include "sqlock/doctor.hpp"
#include "sqlock/mysql/mysql.hpp"

namespace sqlock::mysql::detail {

/// The checks of one MySQL/MariaDB backend (`engine`, which owns it).
class mysql_diagnostics final : public store_diagnostics {
 public:
  mysql_diagnostics(sql::engine_backend& engine, const options& o);
  std::vector<finding> check(steady_time deadline) override;

 private:
  sql::rows ask(const std::string& text, steady_time bound);
  std::optional<std::string> variable(const std::string& name, steady_time bound);

  sql::engine_backend& engine_;
  const options o_;
};

}  // namespace sqlock::mysql::detail
