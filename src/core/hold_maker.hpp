// How the core's lock classes make a sqlock::hold: one backend hold of a kind in a slot of its
// own, taken through client_impl::take(). Internal to the core.
#pragma once

#include "client_impl.hpp"
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
  };
  /// A hold of `name`, or an empty hold when not obtained by `deadline` (one attempt when not
  /// `wait`). Throws what the backend throws, interrupted when `a.stop` ended the wait.
  static sqlock::hold take(const std::shared_ptr<client_impl>& c, const std::string& name,
                           const lock_options& o, const ask& a, steady_time deadline, bool wait);
  /// Shortens the hold to `left` and leaves it on the server unreleased; `h` is empty after.
  static bool leave(sqlock::hold& h, milliseconds left) noexcept;
  /// The client's shared state.
  static const std::shared_ptr<client_impl>& impl(const client& c) { return c.impl_; }
  /// The hold's client and slot (null when empty).
  static hold_slot* slot(const sqlock::hold& h) { return h.slot_.get(); }
};

/// Makes `h`'s loss call the callback `owner->on_lost` holds at that moment (read under
/// `owner->m`), while `owner` lives: the loss signal of a lock class with many holds.
template <class State>
void relay_lost(sqlock::hold& h, const std::shared_ptr<State>& owner) {
  h.on_lost([w = std::weak_ptr<State>(owner)](const std::string& n) {
    auto s = w.lock();
    if (!s) return;
    std::function<void(const std::string&)> cb;
    {
      std::lock_guard lk(s->m);
      cb = s->on_lost;
    }
    if (cb) cb(n);
  });
}

/// Throws config_error for an empty name or lease options that cannot work.
void check_options(const std::string& name, const lock_options& o);

}  // namespace sqlock::detail
