// The embedded default backend: a SQLite database file shared by the processes of one machine.
// URL: sqlite:PATH or sqlite:///abs/path, with ?mode=pessimistic|optimistic,
// ?busy_timeout=5s and ?max_connections=8 (connections to the file opened at once, kept). `sqlite:`
// alone is the default file $XDG_STATE_HOME/sqlock/locks.db. WAL journal, BEGIN IMMEDIATE
// transactions, leases on the kernel's boot-time clock, waiters woken by inotify on the WAL file.
// The schema is created on first use (it is your file).
// ?compat=shedlock (with ?shedlock_table=shedlock): ShedLock's table and rules instead of
// sqlock's schema (docs/interop.md); the table is created on first use when absent.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "sqlock/backend.hpp"
#include "sqlock/export.hpp"

namespace sqlock::sqlite {

/// Options of a SQLite store (an aggregate: use designated initialisers).
struct options {
  std::string mode = "pessimistic";  ///< "pessimistic" or "optimistic"
  milliseconds busy_timeout{5000};   ///< how long one statement waits for the write lock; >0
  /// The most connections to the file this backend opens at once (kept, and waited for within
  /// each call's deadline when all are busy); nullopt = `pool`, or 8.
  std::optional<std::size_t> max_connections{};
  std::optional<std::size_t> pool{};  ///< the same bound under its older name (>= 1)
  /// A peer's layout instead of sqlock's schema: "" (sqlock's own) or "shedlock"
  /// (docs/interop.md). A layout takes no `mode` but the default.
  std::string compat{};
  std::string shedlock_table = "shedlock";  ///< compat=shedlock: ShedLock's table
};

/// Opens (and creates, with its schema) the database at `path`. Throws config_error for a bad
/// mode or an unusable path.
SQLOCK_API std::shared_ptr<backend> open(const std::string& path, const options& opts = {});

/// $XDG_STATE_HOME/sqlock/locks.db, or ~/.local/state/sqlock/locks.db.
SQLOCK_API std::string default_path();

}  // namespace sqlock::sqlite
