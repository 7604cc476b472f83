// The SQL files of one database embedded at build time (migrations/<db>/, sql/<db>/) and the
// versions their migration file names carry.
#pragma once

#include <string_view>
#include <vector>

namespace sqlock::sql {

/// An embedded SQL file.
struct sql_file {
  std::string_view name;  ///< file name ("V001__locks.sql")
  std::string_view text;  ///< file contents
};

/// The SQL files of one database, embedded at build time from migrations/<db>/ and sql/<db>/.
struct bundle {
  std::string_view db;               ///< "sqlite", "postgresql", "mysql"
  std::vector<sql_file> migrations;  ///< migrations/<db>/V*.sql, in version order
  std::vector<sql_file> routines;    ///< sql/<db>/*.sql, in name order
  /// A file of `routines` by name; config_error when absent.
  std::string_view routine(std::string_view file_name) const;
};

/// Version number of a migration file name "V012__x.sql" (12); config_error when malformed.
int migration_version(std::string_view file_name);
/// The newest migration version of a bundle.
int latest_version(const bundle& b);

}  // namespace sqlock::sql
