// compat=shedlock: ShedLock's table (name, lock_until, locked_at, locked_by) and the rules of its
// SQL providers (providers/sql/shedlock-sql-support in github.com/lukas-krecan/ShedLock), as an
// engine dialect. The rules are written once, here; each database gives only its SQL
// expressions (shedlock_sql), in src/backends/<db>/shedlock.cpp.
//   acquire  insert; on a duplicate name, update where lock_until <= now
//   renew    ShedLock's extend: update where name, locked_by and lock_until > now
//   release  ShedLock's unlock with lockAtLeastFor 0: lock_until = max(locked_at, now), of a
//            hold that has not ended (so a second release finds nothing held); the row is kept
//            (run_exclusive's at_least shortens the lease by a renew instead)
// locked_by is "<holder> <owner token>": owner-checked like ShedLock's hostname, and a retry of
// a lost acquire by the same owner finds its own row (sqlock's one addition to the rules).
#pragma once

#include <functional>
#include <string>

#include "sql/rows.hpp"
#include "sql/sql_dialect.hpp"

namespace sqlock::sql {

/// What one database writes differently in ShedLock's layout.
struct shedlock_sql {
  std::string kind;       ///< the dialect's kind: "postgresql", "mysql", "sqlite"
  std::string now;        ///< the store's now, in lock_until's type
  std::string lease_end;  ///< now + :lease_ms, in lock_until's type
  std::string locked_by;  ///< "<holder> <owner>" cut to ShedLock's 255 characters
  /// Whether `column` (locked_by, maybe table-qualified) names the owner :owner.
  std::function<std::string(const std::string& column)> owned_by;
  std::string owner_of_row;   ///< the owner token in locked_by, '' when it carries none (list)
  std::string holder_of_row;  ///< locked_by without a trailing " <owner token>" (list)
  /// `column` (a lock_until or locked_at) as ISO-8601 UTC text.
  std::function<std::string(const std::string& column)> iso;
  std::string name_has_prefix;  ///< whether name starts with :prefix
  /// What follows the acquire's INSERT ... VALUES(...) to update a row whose name exists when
  /// `when` holds (PostgreSQL's ON CONFLICT ... RETURNING), given the SET list; null: the
  /// acquire inserts ignoring a duplicate (`insert_ignore`), then updates, in one transaction.
  std::function<std::string(const std::string& set, const std::string& when)> on_duplicate_name;
  std::string insert_ignore;  ///< "INSERT IGNORE INTO" and the like (when no `upsert`)
  /// An UPDATE as the statements of an operation whose one row says whether it applied:
  /// `confirm` is a query with a row when the update's effect holds, for a database whose
  /// affected-row count misses a row set to the values it had (MySQL's ROW_COUNT()); empty
  /// when the count is right.
  std::function<std::vector<std::string>(std::string update, std::string confirm)> applied;
  std::string columns;  ///< the CREATE TABLE's column list and key, in parentheses
  /// A query returning one row when `table` exists.
  std::function<std::string(const std::string& table)> table_exists;
};

/// The engine dialect of ShedLock's table `table` (checked: sql::check_table_name) on the
/// database `db` describes.
dialect shedlock_dialect(const shedlock_sql& db, const std::string& table);

}  // namespace sqlock::sql
