// The core's side of sqlock/observer.hpp: one object per client that knows the observer and
// the backend's kind and mode (read once), with one inline call per event so client.cpp and
// client_impl.cpp stay one line per event. Every call returns at once, before reading a clock
// or building anything, when the client has no observer. Internal to the core.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "sqlock/backend.hpp"
#include "sqlock/observer.hpp"

namespace sqlock::detail {

/// The observer of one client with the backend kind and mode it reports.
class observe_point {
 public:
  /// Nobody listens.
  observe_point() = default;
  /// Reads the backend's kind and mode once when `o` is set.
  observe_point(std::shared_ptr<observer> o, const backend& b)
      : o_(std::move(o)), kind_(o_ ? b.kind() : ""), mode_(o_ ? b.mode() : "") {}

  /// The start of a lock call (epoch when nobody listens: no clock read).
  steady_time now() const { return o_ ? std::chrono::steady_clock::now() : steady_time{}; }

  /// A lock call goes to the backend.
  void attempt(std::string_view name) const {
    if (o_) send({.type = event_type::attempt, .name = name});
  }
  /// The backend granted a hold; `started` from now().
  void acquired(std::string_view name, steady_time started, bool contended,
                std::uint64_t fence) const {
    if (o_)
      send({.type = event_type::acquired,
            .name = name,
            .fence = fence,
            .contended = contended,
            .wait = since(started)});
  }
  /// A lock call gave up; `started` from now().
  void timeout(std::string_view name, steady_time started) const {
    if (o_) send({.type = event_type::timeout, .name = name, .wait = since(started)});
  }
  /// A connection error is retried while acquiring.
  void retry(std::string_view name, std::string_view error) const {
    if (o_) send({.type = event_type::retry, .name = name, .error = error});
  }
  /// A lease was extended.
  void renewed(std::string_view name, std::uint64_t fence) const {
    if (o_) send({.type = event_type::renewed, .name = name, .fence = fence});
  }
  /// A renewal failed with an error (retried).
  void renewal_failed(std::string_view name, std::uint64_t fence, std::string_view error) const {
    if (o_)
      send({.type = event_type::renewal_failed, .name = name, .fence = fence, .error = error});
  }
  /// A hold acquired at `held_since` was found lost.
  void lost(std::string_view name, std::uint64_t fence, steady_time held_since) const {
    if (o_)
      send({.type = event_type::lost, .name = name, .fence = fence, .held = since(held_since)});
  }
  /// A hold acquired at `held_since` was released.
  void released(std::string_view name, std::uint64_t fence, steady_time held_since) const {
    if (o_)
      send({.type = event_type::released, .name = name, .fence = fence, .held = since(held_since)});
  }
  /// A release failed.
  void release_failed(std::string_view name, std::uint64_t fence, steady_time held_since,
                      std::string_view error) const {
    if (o_)
      send({.type = event_type::release_failed,
            .name = name,
            .fence = fence,
            .held = since(held_since),
            .error = error});
  }

  /// For wait_policy::on_retry: tells this observer about retried attempts (null when none).
  std::function<void(std::string_view, std::string_view)> retry_hook() const {
    if (!o_) return {};
    return
        [self = *this](std::string_view name, std::string_view error) { self.retry(name, error); };
  }

 private:
  static std::chrono::nanoseconds since(steady_time t) {
    return t == steady_time{} ? std::chrono::nanoseconds(0) : std::chrono::steady_clock::now() - t;
  }
  void send(event e) const noexcept {
    e.backend = kind_;
    e.mode = mode_;
    o_->notify(e);  // notify() is noexcept: an observer's failure cannot reach the lock
  }

  std::shared_ptr<observer> o_;
  std::string kind_, mode_;
};

}  // namespace sqlock::detail
