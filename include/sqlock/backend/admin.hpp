// The optional interfaces of a backend beside the lock itself: administration of the store
// (list, and optionally forced release, audit trail, sweep, waiting requests) and ownership of a
// schema (check, migrate, script). A backend offers one by returning it from backend::admin() /
// backend::schema() (null by default): the CLI, the client and the conformance suite act on what is
// offered and report `unsupported` for the rest. Part of the backend-author API.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "sqlock/export.hpp"
#include "sqlock/types.hpp"

namespace sqlock {

/// Releases a store's holds regardless of owner (`sqlock release --force`, the admin page).
class SQLOCK_API hold_breaker {
 public:
  virtual ~hold_breaker() = default;
  /// Administrative release of `name` regardless of owner; false when nothing was held.
  /// `actor` is who forces it (a person or tool, e.g. "alice@ops-1" or an admin token's name;
  /// client::force_release() checks it: 1-200 bytes, no control characters), or "" when not
  /// named. A store with an audit trail records it with each event it writes (SQL stores:
  /// "ACTOR (role ROLE)", the database role beside it; "" records the role alone); a store
  /// without one may ignore it.
  virtual bool force_release(std::string_view name, std::string_view actor) = 0;
};

/// The audit trail a store keeps of its lock events (`sqlock events`).
class SQLOCK_API audit_trail {
 public:
  virtual ~audit_trail() = default;
  /// The newest `limit` events of names starting with `prefix`, newest first.
  virtual std::vector<lock_event> events(std::string_view prefix, std::size_t limit) = 0;
};

/// Deletes the expired holds a store keeps (rows that do not go by themselves).
class SQLOCK_API expiry_sweeper {
 public:
  virtual ~expiry_sweeper() = default;
  /// Deletes expired holds; returns how many.
  virtual std::size_t sweep() = 0;
};

/// The requests a store knows to be waiting for a lock (`sqlock list --waiting`, the admin
/// page). Only a store where a waiting request leaves a trace the store can read (a queued node
/// or key, a server-side wait) has one.
class SQLOCK_API waiter_lister {
 public:
  virtual ~waiter_lister() = default;
  /// The waiting requests of names starting with `prefix`, by name and then by position (in
  /// queue order where the store has one). A request that is granted or gives up is no longer
  /// listed.
  virtual std::vector<waiting_request> waiting(std::string_view prefix) = 0;
};

/// Administration of a store: what `sqlock list`, `release --force`, the admin page and a
/// client's sweeps use. `list()` is what every store admin has; the other calls are optional
/// interfaces it returns when the store has them (null by default), and capabilities_of()
/// reports exactly those (`force_release`, `events`, `sweep`, `waiting`): a store cannot claim a
/// call it does not implement. Every member may be called from several threads at once; each call
/// is bounded by the backend's I/O timeout.
class SQLOCK_API store_admin {
 public:
  virtual ~store_admin() = default;
  /// Locks whose name starts with `prefix`.
  virtual std::vector<lock_status> list(std::string_view prefix) = 0;
  /// The store's forced release; null when it cannot release a hold regardless of owner.
  virtual hold_breaker* breaker() noexcept { return nullptr; }
  /// The store's audit trail; null when it keeps none.
  virtual audit_trail* audit() noexcept { return nullptr; }
  /// The store's sweep of expired holds; null when holds go by themselves.
  virtual expiry_sweeper* sweeper() noexcept { return nullptr; }
  /// The store's list of waiting requests; null when waiters leave no trace in the store.
  virtual waiter_lister* waiters() noexcept { return nullptr; }

  /// breaker()->force_release(), or unsupported when the store has no breaker.
  bool force_release(std::string_view name, std::string_view actor = {});
  /// audit()->events(), or unsupported when the store keeps no audit trail.
  std::vector<lock_event> events(std::string_view prefix, std::size_t limit);
  /// sweeper()->sweep(), or 0 when holds go by themselves.
  std::size_t sweep();
  /// waiters()->waiting(), or unsupported when waiters leave no trace in the store.
  std::vector<waiting_request> waiting(std::string_view prefix);
};

/// A store's schema: what `sqlock migrate` applies and prints, and the check connect() makes.
class SQLOCK_API schema_owner {
 public:
  virtual ~schema_owner() = default;
  /// Fails with config_error naming `sqlock migrate` unless the schema is current; returns by
  /// `deadline` (connection_error otherwise).
  virtual void check_schema(steady_time deadline) = 0;
  /// Applies the store's schema migrations and routines; returns the schema version after.
  virtual int migrate() = 0;
  /// The whole install script `sqlock migrate --print` shows.
  virtual std::string migration_script() const = 0;
};

}  // namespace sqlock
