// `sqlock doctor` as a library call: what the store behind a URL is and whether the URL's mode
// is safe there. doctor() opens the URL's backend and, when the backend offers them, runs its
// checks (server and version, pooler, primary or standby, schema and grants, clock offset,
// connection budget, DBA timeouts, replication and quorum); each check is one finding.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "sqlock/backend.hpp"
#include "sqlock/export.hpp"

namespace sqlock {

/// How a finding bears on the URL's mode.
enum class finding_status : std::uint8_t {
  ok,      ///< fine for the URL's mode
  warn,    ///< works, but worth knowing (a limit, a setting, a weaker guarantee)
  unsafe,  ///< the URL's mode does not exclude (or cannot work) there
  error,   ///< the check could not be made, or the store refuses what the mode needs
};

/// "ok", "warn", "unsafe" or "error".
SQLOCK_API const char* to_string(finding_status s) noexcept;

/// One line of the report: which check, its status, and what was found (never a password).
struct finding {
  std::string check;  ///< short name: "server", "pooler", "role", "schema", "clock", ...
  finding_status status = finding_status::ok;  ///< ok, warn, unsafe or error
  std::string message;                         ///< one line for a person
};

/// The checks a backend offers (backend::diagnostics(); null for a backend with none). Kept
/// apart from the lock seam: a backend with no checks implements nothing.
class SQLOCK_API store_diagnostics {
 public:
  virtual ~store_diagnostics() = default;
  /// Runs every check of the store, each bounded by `deadline` (and the backend's I/O
  /// timeout). A check that fails on its own is a finding with status error; a store that
  /// cannot be reached throws connection_error, refused credentials auth_error.
  virtual std::vector<finding> check(steady_time deadline) = 0;
};

/// Opens the backend of `url` (config_error for a bad URL) and returns its findings: the store
/// and mode first, then the backend's checks. Throws connection_error when the store cannot be
/// reached by `deadline`, auth_error when it refuses the credentials.
SQLOCK_API std::vector<finding> doctor(const std::string& url, steady_time deadline);

/// For backends' checks: runs `fn`, which appends its findings to `out`; an error of its own (a
/// view the role may not read, a server without the setting) becomes one finding `check` with
/// status error. connection_error and auth_error propagate: they end the report.
SQLOCK_API void run_check(std::vector<finding>& out, const std::string& check,
                          const std::function<void()>& fn);

/// "12 ms", "-1.5 s", "3 min": a duration in a finding's message.
SQLOCK_API std::string human_duration(std::chrono::milliseconds d);

/// The clock finding `check` of a server whose clock read `server_seconds` (Unix time) between
/// `before` and `after` on this machine's system_clock (the report's only wall-clock reads):
/// the offset from their midpoint and the round trip, warn beyond 1 s; `note` ends the message.
SQLOCK_API finding clock_finding(const std::string& check,
                                 std::chrono::system_clock::time_point before,
                                 std::chrono::system_clock::time_point after, double server_seconds,
                                 const std::string& note);

/// True when no finding is unsafe or error: the URL's mode is safe there.
SQLOCK_API bool healthy(const std::vector<finding>& findings) noexcept;

}  // namespace sqlock
