// The optional interfaces of a backend beside the lock itself: administration of the store
// (list, audit trail, forced release, sweep) and ownership of a schema (check, migrate, script).
// A backend offers one by returning it from backend::admin() / backend::schema() (null by
// default): the CLI, the client and the conformance suite act on what is offered and report
// `unsupported` for the rest. Part of the backend-author API.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "sqlock/export.hpp"
#include "sqlock/types.hpp"

namespace sqlock {

/// Administration of a store: what `sqlock list`, `release --force`, the admin page and a
/// client's sweeps use. Every member may be called from several threads at once; each call is
/// bounded by the backend's I/O timeout.
class SQLOCK_API store_admin {
 public:
  virtual ~store_admin() = default;
  /// Locks whose name starts with `prefix`.
  virtual std::vector<lock_status> list(std::string_view prefix) = 0;
  /// Administrative release regardless of owner; false when nothing was held. A store that
  /// cannot (caps().force_release false) throws unsupported saying why.
  virtual bool force_release(std::string_view name) = 0;
  /// The newest `limit` events of the store's audit trail of names starting with `prefix`,
  /// newest first. Default (caps().events false) throws unsupported.
  virtual std::vector<lock_event> events(std::string_view prefix, std::size_t limit);
  /// Deletes expired holds; returns how many. Default: 0 (holds expire by themselves).
  virtual std::size_t sweep() { return 0; }
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
