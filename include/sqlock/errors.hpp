// Error types thrown by sqlock. A shallow tree under sqlock::error so callers can catch what
// they can act on: bad configuration is never retried, connection trouble may be, a server
// refusal carries the server's code. "Busy" is never an exception: it is a return value.
#pragma once

#include <stdexcept>
#include <string>

#include "sqlock/export.hpp"

namespace sqlock {

/// Root of every exception sqlock throws.
class SQLOCK_API error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Bad URL, option, lock name or duration; retrying will not help.
class SQLOCK_API config_error : public error {
 public:
  using error::error;
};

/// The store refused our credentials or permissions (bad password, unknown user, no EXECUTE
/// grant, TLS refused). A config_error: retrying with the same settings will not help.
class SQLOCK_API auth_error : public config_error {
 public:
  using config_error::config_error;
};

/// The store's sqlock schema is missing or older than this library needs: run `sqlock migrate`
/// (or apply `sqlock migrate --print`). A config_error: retrying will not help until then.
class SQLOCK_API schema_error : public config_error {
 public:
  using config_error::config_error;
};

/// The backend could not be reached or the connection broke; retrying may help.
class SQLOCK_API connection_error : public error {
 public:
  using error::error;
};

/// The server refused an operation; carries the server's code (SQLSTATE or native number).
class SQLOCK_API backend_error : public error {
 public:
  /// `code` is the SQLSTATE or native error code as text ("" when the server gave none).
  backend_error(const std::string& what, std::string code = {})
      : error(what), code_(std::move(code)) {}
  /// SQLSTATE or native error code as text.
  const std::string& code() const noexcept { return code_; }

 private:
  std::string code_;
};

/// The server reached is read-only: a PostgreSQL hot standby (pg_is_in_recovery(), SQLSTATE
/// 25006 on a write) or a read-only MySQL/MariaDB server or replica (read_only, error 1290 or
/// 1836). The message names the server and what to point the URL at instead. Not retried by
/// the core: the same URL keeps reaching the same server (a multi-host PostgreSQL URL with
/// target_session_attrs=read-write is how to follow a primary). A renewal that meets it
/// reports the hold lost at once. `sqlock` exits 78 on it.
class SQLOCK_API read_only_error : public backend_error {
 public:
  using backend_error::backend_error;
};

/// The lock was lost while it was believed held (lease expired, session died, forced release).
class SQLOCK_API lock_lost : public error {
 public:
  using error::error;
};

/// The backend cannot do what was asked (see capabilities).
class SQLOCK_API unsupported : public error {
 public:
  using error::error;
};

/// The API was used wrongly (fence() or renew() while not held, a moved-from handle, ...).
/// Not thrown by unlock(): unlock() of a lock this thread does not hold does nothing and
/// records the misuse in mutex::last_error().
class SQLOCK_API usage_error : public error {
 public:
  using error::error;
};

/// A waiting acquire (lock(), try_lock_for(), lock_shared(), semaphore::acquire(), a campaign,
/// run_exclusive()) was stopped through the std::stop_token it was given before it obtained
/// the lock. It ended as a timeout would: nothing is held and its waiter's place in the
/// store's queue (a ZooKeeper node, an etcd key, a server-side wait) is gone. A timeout
/// returns false or an empty hold; a stop throws this, so the two stay apart.
class SQLOCK_API interrupted : public error {
 public:
  using error::error;
};

}  // namespace sqlock
