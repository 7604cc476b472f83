// How the core's lock classes make a sqlock::hold: one backend hold of a kind in a slot of its
// own, taken through client_impl::take() and seen through a lock_handle. Internal to the core.
#pragma once

#include <exception>
#include <functional>

#include "client_impl.hpp"
#include "lock_handle.hpp"
#include "sqlock/hold.hpp"

namespace sqlock::detail {

/// The one place that builds holds and reaches into a client; a friend of both.
struct hold_maker {
  /// What one hold asks for.
  struct ask {
    lock_kind kind = lock_kind::exclusive;
    std::uint32_t permits = 0;
    std::string holder{};       ///< "" = the client's holder text
    bool watch_expiry = false;  ///< declare loss when an unrenewed lease runs out
    std::stop_token stop{};     ///< ends the wait (interrupted)
    /// The callback of the handle the hold belongs to (a shared_mutex's, an election's); null
    /// = the hold's own.
    std::shared_ptr<loss_callback> on_lost{};
  };
  /// A hold of `name`, or an empty hold when not obtained by `deadline` (one attempt when not
  /// `wait`). Throws what the backend throws, interrupted when `a.stop` ended the wait.
  static sqlock::hold take(const std::shared_ptr<client_impl>& c, const std::string& name,
                           const lock_options& o, const ask& a, steady_time deadline, bool wait);
  /// A lock object's part of a take: its client, name, options and what it asks for.
  struct target {
    std::shared_ptr<client_impl> c;
    std::string name;
    lock_options o;
    ask a;
  };
  /// A mutex's exclusive hold of its name (client.cpp); usage_error for a moved-from handle.
  static target of(const mutex& m);
  /// A shared_mutex's hold of `kind` (shared_mutex.cpp).
  static target of(const shared_mutex& m, lock_kind kind);
  /// One permit of a semaphore (semaphore.cpp).
  static target of(const semaphore& s);
  /// A term of an election for `value` (election.cpp).
  static target of(const election& e, const std::string& value);
  /// Starts an asynchronous take of `t` (async_driver.hpp) by `deadline`; `done` gets the hold
  /// (empty when not obtained by then) or what take() would throw. Throws, without calling
  /// `done`, what fails before the request starts (config_error, interrupted).
  static void take_async(const target& t, steady_time deadline,
                         std::function<void(std::exception_ptr, sqlock::hold)> done);
  /// The hold seen through `core`.
  static sqlock::hold make(std::shared_ptr<lock_handle> core) {
    return sqlock::hold(std::move(core));
  }
  /// The client's shared state.
  static const std::shared_ptr<client_impl>& impl(const client& c) { return c.impl_; }
  /// The hold's core (null when empty).
  static const std::shared_ptr<lock_handle>& core(const sqlock::hold& h) { return h.core_; }
};

/// Throws config_error for an empty name or lease options that cannot work.
void check_options(const std::string& name, const lock_options& o);

}  // namespace sqlock::detail
