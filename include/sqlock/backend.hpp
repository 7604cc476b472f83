// The seam between sqlock's core and a backend. A backend performs single attempts (acquire,
// renew, release) against its store, each bounded by the caller's deadline; everything about
// waiting, renewal scheduling, reentrancy and loss reporting lives once, in the core. State
// that one acquire() call needs between its attempts lives in a wait_state made for that call.
// A backend whose holds can die outside any call (a session-bound hold whose connection
// closed) tells the core at once through report_lost(). A backend whose nature is a queue
// (ZooKeeper) may override acquire() to wait fairly; its public behaviour must stay identical
// and is proven by the shared conformance suite. A waiting acquire() can be stopped from
// another thread through the request's std::stop_token: it then ends as at its deadline
// (nothing held, its queue entry removed), promptly.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "sqlock/export.hpp"

namespace sqlock {

using std::chrono::milliseconds;
using steady_time = std::chrono::steady_clock::time_point;

/// What a request asks for. Every kind's holds carry their own owner, lease and fence; the fence
/// of an exclusive hold exceeds the fence of every earlier hold of the name, of any kind.
enum class lock_kind : std::uint8_t {
  exclusive,  ///< the name alone (a mutex)
  shared,     ///< one of any number of shared holders; excludes and is excluded by exclusive
              ///< holds; a waiting exclusive request keeps new shared holders out
  permit,     ///< one of `permits` holders of the name (a counting semaphore)
};

class store_diagnostics;  // sqlock/doctor.hpp

/// "exclusive", "shared" or "permit".
SQLOCK_API const char* to_string(lock_kind k) noexcept;

/// What one acquisition attempt needs.
struct lock_request {
  std::string name;      ///< any non-empty UTF-8 (or binary) string, stored verbatim
  std::string owner;     ///< 128-bit CSPRNG token in hex, new for every acquisition
  milliseconds lease{};  ///< server-side expiry, measured on the server's clock (> 0)
  std::string holder;    ///< free text describing the holder: "host:pid:program"
  lock_kind kind = lock_kind::exclusive;  ///< what is asked for
  std::uint32_t permits = 0;  ///< kind permit: how many holders the name admits (>= 1; every
                              ///< user of the name must give the same, else config_error);
                              ///< 0 for the other kinds
  std::stop_token stop{};     ///< a requested stop ends a waiting acquire() as its deadline
                              ///< would (empty result, nothing held, the waiter's node, key or
                              ///< registration removed), promptly: every wait of the call
                              ///< wakes on it; a default token never stops
};

/// A hold the backend granted.
struct lease_info {
  std::string name;             ///< the lock name
  std::string owner;            ///< the owner token used to acquire
  std::uint64_t fence = 0;      ///< fencing token: strictly rises across holders of a name
  std::shared_ptr<void> state;  ///< backend-private (session handle, node path, ...); may be null
  bool waited = false;          ///< acquire() had to wait for it (contention statistics)
  steady_time sent{};           ///< when the lease began, on steady_clock (epoch = not known:
                                ///< acquire() then sets when the winning request was sent). A
                                ///< backend whose request may wait in the server before the
                                ///< grant sets it: to when the answer arrived for a hold that
                                ///< has no lease on the server (session-bound), never later
                                ///< than the server started a lease it keeps
  lock_kind kind = lock_kind::exclusive;  ///< what the request asked for (set by the core): a
                                          ///< backend releases by it a hold it has no state of
};

/// One hold of a batch renewal (backend::renew_all) and, once it returns, what came of it.
struct renewal {
  /// What a renewal found.
  enum class outcome {
    unknown,  ///< not answered or failed (`error` says why): the core tries again in the lease
    renewed,  ///< extended by `duration` from `sent`
    gone      ///< the hold is gone (expired and taken, forced, session died)
  };
  const lease_info* lease = nullptr;  ///< the hold
  milliseconds duration{};            ///< the lease to extend it by
  steady_time deadline{};             ///< an answer after this is moot (the lease has ended)
  steady_time sent{};                 ///< set by renew_all(): when its request was sent
  outcome result = outcome::unknown;  ///< set by renew_all()
  std::string error;                  ///< set by renew_all() when the result is unknown
};

/// One row of `list()`: a lock as the backend sees it.
struct lock_status {
  std::string name;         ///< lock name, verbatim
  std::string owner;        ///< owner token of the holder
  std::uint64_t fence = 0;  ///< fencing token of the hold
  std::string acquired_at;  ///< server time, ISO-8601 UTC ("" when unknown)
  std::string expires_at;   ///< server time, ISO-8601 UTC ("" when bound to a session)
  std::string mode;         ///< backend mode: pessimistic, optimistic, advisory, ...
  std::string holder;       ///< holder description given at acquire ("" when unknown)
  lock_kind kind = lock_kind::exclusive;  ///< what the hold is
  std::uint32_t permits = 0;              ///< kind permit: the name's number of permits
};

/// One entry of a store's audit trail (events()).
struct lock_event {
  std::string at;           ///< server time, ISO-8601 UTC
  std::string event;        ///< acquire, release, force_release, sweep, ...
  std::string name;         ///< lock name ("" for events of no one name)
  std::string owner;        ///< owner token of the hold concerned ("" when none)
  std::uint64_t fence = 0;  ///< fence of the hold concerned (0 when none)
  std::string mode;         ///< backend mode of the hold
  std::string holder;       ///< holder description of the hold
  std::string actor;        ///< the database user that caused it
  std::string detail;       ///< free text ("" when none)
};

/// What a backend can do; the core and the conformance suite read these.
struct capabilities {
  bool fencing = true;         ///< fence tokens strictly rise across holders of a name
  bool fencing_safe = true;    ///< tokens stay monotonic across server failover
  bool notify = false;         ///< open_wait() gives waits that the server ends on release
  bool fair = false;           ///< waiters are served in arrival order (acquire() overridden)
  bool session_bound = false;  ///< the hold dies with the connection/session, not by lease
  bool list = true;            ///< list() works
  bool holder_text = true;     ///< the store keeps each hold's holder text (list() shows it; an
                               ///< election's leader value); false in a peer's layout with no
                               ///< room for it (Redis compat=plain)
  bool force_release = true;   ///< force_release() works
  bool sweep = false;          ///< sweep() deletes expired rows
  bool cross_process = true;   ///< two processes exclude each other (false for memory:)
  bool schema = false;         ///< the store has a schema: migrate() and migration_script() work
  bool events = false;         ///< events() reads an audit trail the store keeps
  bool shared = false;         ///< lock_kind::shared works (else try_acquire throws unsupported)
  bool permits = false;        ///< lock_kind::permit works (else try_acquire throws unsupported)
  bool linger = true;          ///< renew() may shorten a lease, and a hold left unreleased
                               ///< stays until its lease ends even after its holder is gone
                               ///< (run_exclusive's at_least); false when holds die with
                               ///< their session
};

/// The connections one backend object made to its store (backend::connections()).
struct connection_stats {
  std::uint64_t opened = 0;  ///< connections made since the backend was created
  std::size_t open = 0;      ///< connections open now
  std::size_t peak = 0;      ///< most connections open at once
};

/// Waiting policy the core hands to acquire(): capped exponential backoff with full jitter.
struct wait_policy {
  milliseconds initial{2};            ///< first delay between attempts
  milliseconds cap{100};              ///< longest delay between attempts without notification
  milliseconds notify_recheck{1000};  ///< re-check interval when the backend can notify
  milliseconds retry_cap{1000};       ///< longest delay before retrying a failed connection
  milliseconds retry_for{30000};      ///< longest a waiter retries a store that does not
                                      ///< answer (then connection_error); the deadline ends
                                      ///< it sooner
  milliseconds min_attempt{250};      ///< time one attempt may always take, even past the
                                      ///< caller's deadline (try_lock(), try_lock_for(1ms))
  std::function<void(std::string_view name, std::string_view error)>
      on_retry{};  ///< told of each retried connection error (null: a client sets it for its
                   ///< observer)
};

/// What one acquire() call keeps between its attempts and waits: a subscription taken before
/// the first attempt (so a release between a busy attempt and the wait is not missed), what the
/// last busy attempt saw. Made by backend::open_wait() for that one call and destroyed with it:
/// no state passes between calls any other way.
class SQLOCK_API wait_state {
 public:
  virtual ~wait_state() = default;
  /// Blocks until `until`, until the lock may have been released since the last attempt, or
  /// until `stop` is requested (the request's token: the wait returns promptly).
  virtual void wait(steady_time until, const std::stop_token& stop) = 0;
};

/// Told by a backend that a hold died outside any call (its session closed, its lease was
/// revoked): the hold's name and owner token.
using loss_listener = std::function<void(const std::string& name, const std::string& owner)>;

/// Abstract backend. Every member may be called from several threads at once.
///
/// Time: every call that talks to the store returns (or throws connection_error) by the
/// `deadline` it is given, whatever the store does; a backend bounds each exchange by the
/// deadline and by its own I/O timeout, whichever comes first. steady_time::max() = no caller
/// deadline (lock() waits forever), but every exchange is still bounded by the I/O timeout.
class SQLOCK_API backend {
 public:
  backend();
  backend(const backend&) = delete;
  backend& operator=(const backend&) = delete;
  virtual ~backend() = default;

  /// One attempt. Empty result = busy (held by someone else), which is not an error. `ws` is
  /// the wait state open_wait() made for the acquire() call this attempt belongs to, or null.
  /// Throws connection_error when the outcome is unknown (a retry with the same owner token
  /// finds its own hold: every backend's acquire is idempotent for its owner). The kind is one
  /// the backend offers (see require_kind()); a permit request whose `permits`
  /// differs from the name's current holders' throws config_error. A busy exclusive attempt
  /// on a name with shared holders leaves a mark that keeps new shared holders out until the
  /// acquire() call ends (its wait state is destroyed) or a short server-side expiry passes.
  virtual std::optional<lease_info> try_acquire(const lock_request& req, steady_time deadline,
                                                wait_state* ws) = 0;

  /// Extends the lease of a hold. false = the hold is gone (expired and taken, forced, session
  /// died). Throws connection_error when the outcome is unknown.
  virtual bool renew(const lease_info& lease, milliseconds duration, steady_time deadline) = 0;

  /// Renews every hold of `batch` (each by its own deadline) and sets each one's `sent`,
  /// `result` and `error`; never throws. A store that can renew many holds in one round trip
  /// overrides it; the default renews them one at a time with renew().
  virtual void renew_all(std::vector<renewal>& batch) noexcept;

  /// Owner-checked release; idempotent; false when nothing of this owner was held. Throws
  /// connection_error when the outcome is unknown (then the lease ends on the server).
  virtual bool release(const lease_info& lease, steady_time deadline) = 0;

  /// The wait state of one acquire() call for `req`, made before its first attempt; null (the
  /// default) when the store cannot tell about releases: the core then backs off.
  virtual std::unique_ptr<wait_state> open_wait(const lock_request& req);

  /// Acquires, waiting until `deadline` or until `req.stop` is requested (then empty, as at the
  /// deadline); the first attempt is made at once. The default loops try_acquire() with waits
  /// on open_wait()'s state (or capped jittered backoff without one) and retries connection
  /// errors with backoff until the deadline, then rethrows the last. Queue-shaped backends
  /// override it to wait fairly. Sets `waited`, and `sent` unless the attempt set it.
  virtual std::optional<lease_info> acquire(const lock_request& req, steady_time deadline,
                                            const wait_policy& policy);

  /// Locks whose name starts with `prefix`. Default throws unsupported.
  virtual std::vector<lock_status> list(std::string_view prefix);

  /// The newest `limit` events of the store's audit trail of names starting with `prefix`,
  /// newest first. Default throws unsupported (caps().events false).
  virtual std::vector<lock_event> events(std::string_view prefix, std::size_t limit);

  /// Administrative release regardless of owner. Default throws unsupported.
  virtual bool force_release(std::string_view name);

  /// Deletes expired holds; returns how many. Default: 0 (nothing to sweep).
  virtual std::size_t sweep();

  /// Called once by connect() before the first lock, returning by `deadline` (connection_error
  /// when the store has not answered by then; steady_time::max() = bounded by the I/O timeout
  /// only): checks that the server answers and the schema is current (config_error naming
  /// `sqlock migrate` otherwise). Default: nothing.
  virtual void verify(steady_time deadline) { (void)deadline; }
  /// verify() bounded by the I/O timeout only.
  void verify() { verify(steady_time::max()); }

  /// Applies the store's schema migrations and routines; returns the schema version after.
  /// Default (stores without a schema, caps().schema false) throws unsupported.
  virtual int migrate();

  /// The whole install script `sqlock migrate --print` shows. Default throws unsupported.
  virtual std::string migration_script() const;

  /// Declared capabilities.
  virtual capabilities caps() const noexcept = 0;

  /// Short description for logs and bench output: "sqlite:/path (pessimistic)". Never shows
  /// a password.
  virtual std::string describe() const = 0;

  /// Name of the backend kind ("sqlite", "postgresql", ...).
  virtual std::string kind() const = 0;

  /// Mode the backend runs in ("pessimistic", "optimistic", "advisory", "" when not applicable).
  virtual std::string mode() const { return {}; }
  /// The connections this backend object made to its store, for backends that count them
  /// (the SQL server backends); nullopt otherwise.
  virtual std::optional<connection_stats> connections() const { return std::nullopt; }

  /// The store's checks for `sqlock doctor` (sqlock/doctor.hpp), owned by the backend; null
  /// (the default) when it has none. One accessor rather than a virtual per check: a backend
  /// without checks implements nothing, and no caller needs to know the concrete backend.
  virtual store_diagnostics* diagnostics() noexcept { return nullptr; }

  /// Registers a listener for holds that die outside any call; returns its id. Thread-safe.
  std::uint64_t add_loss_listener(loss_listener l);
  /// Removes a listener: it is not called by report_lost() calls that start afterwards (one
  /// already running may still call it, so a listener must hold only weak references).
  void remove_loss_listener(std::uint64_t id);

 protected:
  /// Tells every loss listener that the hold (`name`, `owner`) is gone. Call it from the thread
  /// that noticed (a session watcher); never while holding a lock a listener could need.
  void report_lost(const std::string& name, const std::string& owner);

 private:
  struct listeners;
  std::shared_ptr<listeners> listeners_;
};

/// Throws unsupported, naming the backend and mode, when `req.kind` is not in the backend's
/// caps(), and config_error for a permit request without permits: the check the core makes
/// before it asks a backend for a hold (a backend is never given a kind it does not offer).
SQLOCK_API void require_kind(const backend& b, const lock_request& req);

/// Sleeps until `until` or until `stop` is requested, whichever comes first; false when stopped.
SQLOCK_API bool sleep_until(steady_time until, const std::stop_token& stop);

/// A file descriptor that becomes readable when a stop is requested, for waits that poll():
/// an eventfd written by a std::stop_callback. Holds no descriptor for a token that can never
/// stop (fd() is -1; poll() ignores a negative descriptor).
class SQLOCK_API stop_fd {
 public:
  explicit stop_fd(const std::stop_token& stop);  ///< Watches `stop`.
  ~stop_fd();
  stop_fd(const stop_fd&) = delete;
  stop_fd& operator=(const stop_fd&) = delete;
  /// The descriptor to poll for POLLIN (-1 when the token can never stop).
  int fd() const noexcept { return fd_; }

 private:
  int fd_ = -1;
  std::unique_ptr<std::stop_callback<std::function<void()>>> on_stop_;
};

/// The earlier of `deadline` and now + `io_timeout`: how long one exchange with a store may take.
SQLOCK_API steady_time exchange_bound(steady_time deadline, milliseconds io_timeout);

/// Creates a backend from a parsed URL (see url.hpp). Registered per scheme.
class url;
using backend_factory = std::function<std::shared_ptr<backend>(const url&)>;

/// Registers a factory for a URL scheme ("sqlite", "postgresql", ...). Thread-safe.
SQLOCK_API void register_backend(const std::string& scheme, backend_factory factory);

/// Creates a backend for a URL through the registry; config_error for unknown schemes. A
/// scheme no backend linked into the program serves is looked up as a backend module:
/// libsqlock-backend-NAME.so in the directories of SQLOCK_BACKEND_PATH (colon-separated)
/// or, when unset, in LIBDIR/sqlock/backends of the installation, loaded once.
SQLOCK_API std::shared_ptr<backend> make_backend(const std::string& url_text);

/// Schemes registered so far and the schemes of the backend modules found, sorted.
SQLOCK_API std::vector<std::string> registered_schemes();

/// What a backend module's entry point is given: the program's register_backend().
using module_register_fn = void (*)(const std::string& scheme, backend_factory factory);

namespace detail {
/// Runs `register_all` (a backend's registration) and hands each scheme it registered to
/// `host`: the body of SQLOCK_BACKEND_MODULE's entry point. A module linked with its own copy
/// of the core registers into that copy first; `host` makes the schemes the program's.
SQLOCK_API void register_module(module_register_fn host, void (*register_all)());
/// Adds a backend linked into the program; `register_all` runs before the first lookup.
/// Called by each backend library's static initializer; returns true.
SQLOCK_API bool add_builtin(void (*register_all)());
}  // namespace detail

/// Defines the two functions a backend module exports, over `register_all` (a function
/// registering the module's schemes with register_backend()):
///   extern "C" void sqlock_backend_module_v1(sqlock::module_register_fn host);
///   extern "C" const char* sqlock_backend_module_version();  // SQLOCK_VERSION_STRING
/// The loader refuses a module whose version differs from the library's. The file using it
/// includes "sqlock/version.hpp" (the version the module is built with).
#define SQLOCK_BACKEND_MODULE(register_all)                                                \
  extern "C" SQLOCK_API void sqlock_backend_module_v1(::sqlock::module_register_fn host) { \
    ::sqlock::detail::register_module(host, register_all);                                 \
  }                                                                                        \
  extern "C" SQLOCK_API const char* sqlock_backend_module_version() {                      \
    return SQLOCK_VERSION_STRING;                                                          \
  }

}  // namespace sqlock
