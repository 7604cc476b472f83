// The seam between sqlock's core and a backend. A backend performs single attempts (acquire,
// renew, release) against its store, each bounded by the caller's deadline; everything about
// waiting, retrying, renewal scheduling, reentrancy and loss reporting lives once, in the core.
// What one lock request needs between its attempts lives in the acquisition the backend makes
// for it (acquisition.hpp); administration and schema are optional interfaces (admin.hpp). A
// backend whose holds can die outside any call (a session-bound hold whose connection closed)
// tells the core at once through report_lost(). Part of the backend-author API.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sqlock/backend/acquisition.hpp"
#include "sqlock/backend/admin.hpp"
#include "sqlock/backend/request.hpp"
#include "sqlock/export.hpp"
#include "sqlock/types.hpp"

namespace sqlock {

class store_diagnostics;  // sqlock/doctor.hpp

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

  /// One attempt with nothing kept for later (try_lock()). Empty result = busy (held by
  /// someone else), which is not an error. Throws connection_error when the outcome is unknown
  /// (a retry with the same owner token finds its own hold: every backend's acquire is
  /// idempotent for its owner). The kind is one the backend offers (see require_kind()); a
  /// permit request whose `permits` differs from the name's current holders' throws
  /// config_error.
  virtual std::optional<lease_info> try_acquire(const lock_request& req, steady_time deadline) = 0;

  /// The acquisition of one waiting request for `req` (copied as needed), made before its first
  /// attempt; `policy` paces waits that cannot tell about releases. The default attempts
  /// through try_acquire() and backs off between attempts; a store that can tell about
  /// releases, leaves marks between attempts or queues its waiters returns its own.
  virtual std::unique_ptr<acquisition> make_acquisition(const lock_request& req,
                                                        const wait_policy& policy);

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

  /// True when the client should call release() from a background thread of its own and let
  /// unlock() return at once (URL option `release=async` of a store whose release() waits for
  /// its answer): the client then makes the same client's next acquire of that name wait for
  /// the release first, and hands a release without an answer to its orphan releases as it
  /// does in the caller's thread. A backend that sends its releases without waiting by itself
  /// returns false. Default: false.
  virtual bool release_in_background() const noexcept { return false; }

  /// Declared capabilities of the lock itself (fencing, kinds, notify, ...). The admin and
  /// schema ones (list, force_release, events, sweep, schema) are not declared here: they
  /// follow from admin() and schema() (see capabilities_of()).
  virtual capabilities caps() const noexcept = 0;

  /// Short description for logs and bench output: "sqlite:/path (pessimistic)". Never shows
  /// a password.
  virtual std::string describe() const = 0;

  /// Name of the backend kind ("sqlite", "postgresql", ...).
  virtual std::string kind() const = 0;

  /// Mode the backend runs in ("pessimistic", "optimistic", "advisory", "" when not applicable).
  virtual std::string mode() const { return {}; }

  /// Called once by connect() before the first lock, returning by `deadline` (connection_error
  /// when the store has not answered by then; steady_time::max() = bounded by the I/O timeout
  /// only): checks that the server answers, and the schema of a store that owns one
  /// (config_error naming `sqlock migrate` otherwise). Default: nothing.
  virtual void verify(steady_time deadline) { (void)deadline; }
  /// verify() bounded by the I/O timeout only.
  void verify() { verify(steady_time::max()); }

  /// The connections this backend object made to its store, for backends that count them
  /// (the SQL server backends); nullopt otherwise.
  virtual std::optional<connection_stats> connections() const { return std::nullopt; }

  /// The store's administration (list, events, forced release, sweep); null (the default)
  /// when it offers none.
  virtual store_admin* admin() noexcept { return nullptr; }
  /// The store's schema (check, migrate, script); null (the default) when it keeps none.
  virtual schema_owner* schema() noexcept { return nullptr; }
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

/// caps() with what follows from the backend's interfaces: `list` when it has an admin(),
/// `force_release`, `events`, `sweep`, `waiting` when that admin has a breaker(), audit(),
/// sweeper(), waiters(),
/// `schema` when it has a schema(). What the client, the CLI and the conformance suite read.
SQLOCK_API capabilities capabilities_of(backend& b) noexcept;

/// Throws unsupported, naming the backend and mode, when `req.kind` is not in the backend's
/// caps(), and config_error for a permit request without permits: the check the core makes
/// before it asks a backend for a hold (a backend is never given a kind it does not offer).
SQLOCK_API void require_kind(const backend& b, const lock_request& req);

/// The store's admin, or unsupported naming the backend ("<kind> backend cannot <what>").
SQLOCK_API store_admin& admin_of(backend& b, const char* what);
/// The store's schema, or unsupported ("<kind> keeps no schema: nothing to migrate").
SQLOCK_API schema_owner& schema_of(backend& b);

}  // namespace sqlock
