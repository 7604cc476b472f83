// The seam between sqlock's core and a backend. A backend performs single attempts (acquire,
// renew, release) against its store; everything about waiting, deadlines, renewal scheduling,
// reentrancy and loss reporting lives once, in the core. A backend whose nature is a queue
// (ZooKeeper) may override acquire() to wait fairly; its public behaviour must stay identical
// and is proven by the shared conformance suite.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sqlock {

using std::chrono::milliseconds;
using steady_time = std::chrono::steady_clock::time_point;

/// What one acquisition attempt needs.
struct lock_request {
  std::string name;      ///< any non-empty UTF-8 (or binary) string, stored verbatim
  std::string owner;     ///< 128-bit CSPRNG token in hex, new for every acquisition
  milliseconds lease{};  ///< server-side expiry, measured on the server's clock (> 0)
  std::string holder;    ///< free text describing the holder: "host:pid:program"
};

/// A hold the backend granted.
struct lease_info {
  std::string name;             ///< the lock name
  std::string owner;            ///< the owner token used to acquire
  std::uint64_t fence = 0;      ///< fencing token: strictly rises across holders of a name
  std::shared_ptr<void> state;  ///< backend-private (session handle, node path, ...); may be null
  bool waited = false;          ///< acquire() had to wait for it (contention statistics)
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
};

/// What a backend can do; the core and the conformance suite read these.
struct capabilities {
  bool fencing = true;         ///< fence tokens strictly rise across holders of a name
  bool fencing_safe = true;    ///< tokens stay monotonic across server failover
  bool notify = false;         ///< wait_for_change() is woken by the server on release
  bool fair = false;           ///< waiters are served in arrival order (acquire() overridden)
  bool session_bound = false;  ///< the hold dies with the connection/session, not by lease
  bool list = true;            ///< list() works
  bool force_release = true;   ///< force_release() works
  bool sweep = false;          ///< sweep() deletes expired rows
  bool cross_process = true;   ///< two processes exclude each other (false for memory:)
};

/// Waiting policy the core hands to acquire(): capped exponential backoff with full jitter.
struct wait_policy {
  milliseconds initial{2};            ///< first delay between attempts
  milliseconds cap{100};              ///< longest delay between attempts without notification
  milliseconds notify_recheck{1000};  ///< re-check interval when the backend can notify
};

/// Abstract backend. Every member may be called from several threads at once.
class backend {
 public:
  virtual ~backend() = default;

  /// One attempt. Empty result = busy (held by someone else), which is not an error.
  virtual std::optional<lease_info> try_acquire(const lock_request& req) = 0;

  /// Extends the lease of a hold. false = the hold is gone (expired and taken, forced, session
  /// died). Throws connection_error when the outcome is unknown.
  virtual bool renew(const lease_info& lease, milliseconds duration) = 0;

  /// Owner-checked release; idempotent; false when nothing of this owner was held.
  virtual bool release(const lease_info& lease) = 0;

  /// Blocks until `until` or until the lock `name` may have been released (NOTIFY, pub/sub,
  /// watch). The default sleeps until `until`.
  virtual void wait_for_change(std::string_view name, steady_time until);

  /// Acquires, waiting until `deadline`; the first attempt is made at once. The default loops
  /// try_acquire() with backoff and wait_for_change(). Queue-shaped backends override it to
  /// wait fairly. A hold obtained after waiting has `waited` set.
  virtual std::optional<lease_info> acquire(const lock_request& req, steady_time deadline,
                                            const wait_policy& policy);

  /// Locks whose name starts with `prefix`. Default throws unsupported.
  virtual std::vector<lock_status> list(std::string_view prefix);

  /// Administrative release regardless of owner. Default throws unsupported.
  virtual bool force_release(std::string_view name);

  /// Deletes expired holds; returns how many. Default: 0 (nothing to sweep).
  virtual std::size_t sweep();

  /// Called once by connect() before the first lock: checks that the server answers and the
  /// schema is current (config_error naming `sqlock migrate` otherwise). Default: nothing.
  virtual void verify() {}

  /// Declared capabilities.
  virtual capabilities caps() const noexcept = 0;

  /// Short description for logs and bench output: "sqlite:/path (pessimistic)".
  virtual std::string describe() const = 0;

  /// Name of the backend kind ("sqlite", "postgresql", ...).
  virtual std::string kind() const = 0;

  /// Mode the backend runs in ("pessimistic", "optimistic", "advisory", "" when not applicable).
  virtual std::string mode() const { return {}; }
};

/// Creates a backend from a parsed URL (see url.hpp). Registered per scheme.
class url;
using backend_factory = std::function<std::shared_ptr<backend>(const url&)>;

/// Registers a factory for a URL scheme ("sqlite", "postgresql", ...). Thread-safe.
void register_backend(const std::string& scheme, backend_factory factory);

/// Creates a backend for a URL through the registry; config_error for unknown schemes.
std::shared_ptr<backend> make_backend(const std::string& url_text);

/// Schemes registered so far, sorted.
std::vector<std::string> registered_schemes();

}  // namespace sqlock
