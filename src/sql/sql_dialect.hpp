// What a SQL backend tells the engine about its database: the operation of each lock call, the
// schema version queries, the routines to install, shared/permit kinds, a peer's table layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hold_recorder.hpp"
#include "sqlock/backend/request.hpp"
#include "statements.hpp"

namespace sqlock::sql {

/// What a backend tells the engine about its database.
struct dialect {
  std::string kind;   ///< "sqlite", "postgresql", "mysql"
  std::string mode;   ///< "pessimistic", "optimistic", "advisory"
  operation acquire;  ///< rows: [fence|NULL, status?]; NULL fence = busy; status "retry" = CAS
                      ///< lost; status "mismatch:<kind>:<permits>" = the name's live holders
                      ///< are of another kind or number of permits (config_error)
  operation renew;    ///< rows: [truthy] = renewed
  operation release;  ///< rows: [truthy] = released
  operation list;     ///< rows: name, owner, fence, acquired_at, expires_at, mode, holder
  operation force_release;  ///< rows: [truthy] = something released
  operation sweep;          ///< rows: [count]
  operation fence_check;    ///< rows: [truthy] = :fence is the current holder's token
  operation events;         ///< rows: at, event, name, owner, fence, mode, holder, actor, detail
                            ///< (:prefix, :limit), newest first; no statements = no audit trail
  /// The store's waiting requests (:prefix), by name and then since: rows name, owner, holder,
  /// kind, permits, since; no statements = waiting requests are not listed (waiters() null).
  operation waiting;
  /// Writes a batch of this client's waiting requests (:waits, encode_waits()'s text) whose rows
  /// live :lease_ms unless written again; rows ignored. Needed with `waiting`.
  operation record_waits;
  /// The text of a batch of waiting requests for record_waits (the backend's JSON library);
  /// empty = waiting requests are not listed.
  std::function<std::string(const hold_recorder::batch&)> encode_waits;
  std::string version_query;  ///< one row, one column: current schema version; no row/NULL = 0
  std::string version_table_query;  ///< one row when the version table exists, none otherwise
  std::string versions_query;  ///< every recorded version, one per row (migrate() runs it as the
                               ///< installer, who may read the version table itself)
  std::vector<std::string> install_routines;  ///< routine files migrate() installs, in order
  /// Rewrites a file before it is run or printed (schema name substitution); identity if empty.
  std::function<std::string(std::string_view)> render;
  std::int64_t sweep_batch = 1000;  ///< :limit for sweep()
  bool notify = false;              ///< set when the backend offers a release_watch

  /// Shared and permit holds (row modes); `kinds` false = the backend offers exclusive only.
  bool kinds = false;
  operation acquire_shared;  ///< a shared (:kind 'shared') or permit (:kind 'permit', :permits)
                             ///< hold; rows as `acquire`
  operation renew_shared;    ///< rows: [truthy] = renewed; empty = `renew` covers them
  operation release_shared;  ///< rows: [truthy] = released
  operation clear_mark;      ///< removes the writer mark of (:name, :owner); rows ignored
  /// Removes the writer marks of many requests in one statement (:marks, encode_marks()'s
  /// text); rows ignored. Empty = clear_mark for each.
  operation clear_marks;
  /// The text of a batch of marks, (name, owner) pairs, for clear_marks (the backend's JSON
  /// library).
  std::function<std::string(const std::vector<std::pair<std::string, std::string>>&)> encode_marks;
  /// Run after `force_release` / `sweep` when those do not cover the shared holds themselves
  /// (SQLite's statement scripts count one table per operation); empty = not needed.
  operation force_release_shared;
  operation sweep_shared;  ///< see force_release_shared

  /// A peer's table layout (URL `compat=`, e.g. ShedLock's table) instead of sqlock's schema:
  /// migrate() runs `layout_ddl` (creating the table when absent, no version table) and
  /// migration_script() prints it; verify() runs `layout_check` (a row when the table exists,
  /// config_error otherwise). Such a layout stores no fencing token and keeps its rows (caps():
  /// no fencing, no sweep). Empty = sqlock's own schema.
  std::string layout_ddl;
  std::string layout_check;  ///< see layout_ddl
  std::string layout_table;  ///< the layout's table, named in messages
  /// Names longer than this many characters are refused with config_error before anything is
  /// sent (a peer's column width); 0 = no limit.
  std::size_t max_name_chars = 0;
};

/// Throws config_error unless `table` is a plain table name, optionally schema-qualified:
/// [A-Za-z_][A-Za-z0-9_]* (at most 63 characters) or two of them joined by '.'. `option`
/// names the URL option it came from. (It is spliced into SQL: a peer's table, compat=.)
void check_table_name(const std::string& table, std::string_view option);

/// Throws the config_error for a request whose kind or permits differ from the name's live
/// holders' (`status` is "mismatch:<kind>:<permits>", as an acquire operation returned it).
[[noreturn]] void kind_mismatch(const lock_request& req, std::string_view status);

}  // namespace sqlock::sql
