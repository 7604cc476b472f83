// What a client tells the outside world: an observer receives one event per step of a lock's
// life (attempt, acquired, timeout, retry, renewed, renewal failed, lost, released, release
// failed), each naming the lock, the backend kind and its mode. Metrics (sqlock::prometheus)
// and logging are observers; the core holds none by default, so nothing is built or formatted
// when nobody listens. Events carry string_views into the core's own strings: valid only
// during the call, copy what you keep. Observers are called from the locking thread or the
// renewal threads, sometimes while the core holds a lock's internal mutex: they must be
// thread-safe, must not block, must not throw (notify is noexcept) and must not call back into
// sqlock.
#pragma once

#include "sqlock/export.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sqlock {

/// The steps of a lock's life an observer hears about.
enum class event_type {
  attempt,         ///< a lock()/try_lock() call goes to the backend
  acquired,        ///< the backend granted a hold: wait, contended, fence are set
  timeout,         ///< a try_lock()/try_lock_for() call gave up: wait is set
  retry,           ///< an attempt failed with a connection error and is retried: error is set
  renewed,         ///< a lease was extended: fence is set
  renewal_failed,  ///< a renewal failed with an error and will be retried: error is set
  lost,            ///< a hold was found lost (renewal refused, lease ran out, session died)
  released,        ///< a hold was released: held, fence are set
  release_failed,  ///< a release failed (the lease then ends on the server): error, held set
};

/// The name of an event type: "acquired", "renewal_failed", ...
SQLOCK_API std::string_view to_string(event_type t) noexcept;

/// One event. Views point into the core's strings and live only during the call.
struct event {
  event_type type{};                 ///< what happened
  std::string_view name{};           ///< lock name, verbatim (any bytes: escape before showing)
  std::string_view backend{};        ///< backend kind: "sqlite", "postgresql", ...
  std::string_view mode{};           ///< backend mode: "pessimistic", ... ("" when none)
  std::uint64_t fence = 0;           ///< fencing token of the hold (0 when none yet)
  bool contended = false;            ///< acquired: the call had to wait for another holder
  std::chrono::nanoseconds wait{0};  ///< acquired/timeout: time since the call started
  std::chrono::nanoseconds held{0};  ///< released/release_failed/lost: time since acquired
  std::string_view error{};          ///< retry/renewal_failed/release_failed: the message
};

/// Receives events. Implementations must be thread-safe, fast and must not block.
class SQLOCK_API observer {
 public:
  virtual ~observer() = default;
  /// Called once per event; catch your own errors (an exception here ends the process).
  virtual void notify(const event& e) noexcept = 0;
};

/// Log levels, lowest first; `off` silences a logger.
enum class log_level { trace, debug, info, warn, error, off };

/// The name of a level: "trace", "debug", "info", "warn", "error", "off".
SQLOCK_API std::string_view to_string(log_level l) noexcept;

/// The level an event is logged at: attempt/renewed trace; acquired/released debug; timeout
/// info; retry/renewal_failed/release_failed warn; lost error.
SQLOCK_API log_level level_of(event_type t) noexcept;

/// Where log lines go: the application's callback (thread-safe; `message` lives only during the
/// call and never holds a lock owner token or a password).
using log_sink = std::function<void(log_level level, std::string_view message)>;

/// An observer that formats events of `min` level and above into one line each and hands them
/// to `sink` (e.g. "acquired lock 'orders:42' on sqlite (pessimistic): fence 7, waited 12.5 ms,
/// contended"). Below `min` nothing is formatted. A null sink or `off` gives a silent logger.
SQLOCK_API std::shared_ptr<observer> make_logger(log_level min, log_sink sink);

/// One line describing `e` (what make_logger() hands to its sink). Control characters of the
/// lock name are shown as '?'.
SQLOCK_API std::string describe(const event& e);

/// An observer that passes each event to every one of `targets` in order (nulls are skipped).
SQLOCK_API std::shared_ptr<observer> fan_out(std::vector<std::shared_ptr<observer>> targets);

}  // namespace sqlock
