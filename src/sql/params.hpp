// The parameters a lock operation's statements may use, bound by name (:name, :owner, ...), and
// their lookup as integer or text values for a driver.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sqlock::sql {

/// The parameters an operation may use, bound by name (":name" in statement text).
struct params {
  std::string name;                ///< :name — lock name, verbatim
  std::string owner;               ///< :owner — owner token
  std::int64_t lease_ms = 0;       ///< :lease_ms — lease in milliseconds
  std::string holder;              ///< :holder — holder description
  std::int64_t fence = 0;          ///< :fence — fencing token (fence_check)
  std::string prefix;              ///< :prefix — name prefix (list)
  std::int64_t limit = 0;          ///< :limit — batch size (sweep)
  std::string mode;                ///< :mode — backend mode name
  std::string kind = "exclusive";  ///< :kind — "exclusive", "shared" or "permit"
  std::int64_t permits = 0;        ///< :permits — a permit request's number of permits (else 0)
  std::string holds;               ///< :holds — a JSON array of holds to record (advisory)
  std::string waits;  ///< :waits — waiting requests to record and ended ones to remove (JSON)
  std::string marks;  ///< :marks — writer marks to remove: [{name, owner}, ...] (JSON)
  std::string actor;  ///< :actor — who forces a release ("" = not named: the role alone)
  std::int64_t mark_ms = 0;  ///< :mark_ms — lifetime of the writer mark a busy exclusive
                             ///< attempt leaves (0 = leave none: a try_lock() that will not wait)
  /// :key — the name's advisory-lock key, for a backend that computes it in the client
  /// (PostgreSQL advisory mode); a statement that uses :key with none set is refused
  std::optional<std::int64_t> key;
};

/// A bound value: integer or text.
struct value {
  bool is_int = false;  ///< true: use `i`; false: use `s`
  std::int64_t i = 0;   ///< integer value
  std::string_view s;   ///< text value (points into params)
};

/// Looks up a named parameter (without the colon); config_error for an unknown name.
value lookup(const params& p, std::string_view key);

}  // namespace sqlock::sql
