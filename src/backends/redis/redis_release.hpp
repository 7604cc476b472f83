// Releases that do not wait (URL option release=async), the bookkeeping of one server: a release
// script appended to a pooled connection is owed a reply until some later use of that connection
// (or the background flush) reads it; a reply that never came (the connection broke or was
// dropped) or came as an error (LOADING, OOM, ...) puts the release on the retry list, sent again
// by the flush until the server answers or its window ends. While a release of a lock is owed or
// retried, the same client's next acquire of that lock either goes out behind it on the same
// connection (which the server answers in order) or waits for it. Internal.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <vector>

#include "sqlock/backend.hpp"

namespace sqlock::redis::detail {

/// One release sent without waiting for its reply.
struct owed_release {
  std::string lock;               ///< the lock name (what a later acquire of it must not overtake)
  std::vector<std::string> argv;  ///< the EVAL call, to send again
  steady_time sent{};             ///< when it was first sent
  steady_time until{};            ///< retries end here
  steady_time next{};             ///< the next retry
  unsigned tries = 0;             ///< retries so far
};

/// How long a release whose reply never came is sent again (the lock's lease ends it anyway).
constexpr milliseconds release_retry_window{60000};

/// The releases of one server that have no answer yet. Thread-safe.
class release_book {
 public:
  /// A release of `lock` was sent; its reply is owed.
  void owe(const std::string& lock);
  /// The reply of `o` came: done, unless it is an error reply (then retried).
  void answered(owed_release o, bool error_reply);
  /// The replies of `os` will never come (connection lost, dropped or not sent): retried.
  void unanswered(std::vector<owed_release> os) noexcept;
  /// True while a release of `lock` is owed or retried.
  bool owes(std::string_view lock) const;
  /// Bumped whenever what is owed changes, or a connection that owes replies goes idle.
  std::uint64_t generation() const;
  /// Waits until generation() differs from `gen`; false when `until` came first.
  bool wait_change(std::uint64_t gen, steady_time until);
  /// Bumps the generation (a connection owing replies went back to the pool).
  void changed();
  /// Takes out the retries due at `now`.
  std::vector<owed_release> due(steady_time now);
  /// A retry of `o` was answered (`ok`) or failed again: done, or back on the list (with
  /// backoff) until its window ends.
  void retried(owed_release o, bool ok);
  /// True when nothing is owed or retried.
  bool clear() const;

 private:
  void settle_locked(const std::string& lock);
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::map<std::string, int, std::less<>> owed_;  // by lock: sent, unanswered or retried
  std::vector<owed_release> retry_;
  std::uint64_t gen_ = 0;
};

/// The background flush of a store: one thread, started by the first async release, that every
/// few milliseconds reads the owed replies of connections left idle for `flush_after` and sends
/// the due retries (`step`, given by the store); it sleeps while nothing is owed.
class release_flusher {
 public:
  /// `step(now)` does one pass and returns true while anything is still owed.
  explicit release_flusher(std::function<bool(steady_time)> step) : step_(std::move(step)) {}
  /// Stops and joins the thread (what is still owed is left: sent requests still run).
  ~release_flusher();
  release_flusher(const release_flusher&) = delete;
  release_flusher& operator=(const release_flusher&) = delete;
  /// A release was sent: starts the thread if needed and wakes it.
  void poke();

 private:
  void run();
  std::function<bool(steady_time)> step_;
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false, work_ = false;
  bool asleep_ = false;  // waiting for work (not between passes)
  std::thread thread_;
};

/// The owner tokens of the holds a store object granted and has not yet released: only their
/// releases go out without waiting; a release of any other token (another object's, or one
/// already released) waits, so that it can say whether it held. Thread-safe.
class own_holds {
 public:
  /// A hold of `owner` was granted.
  void add(const std::string& owner);
  /// True (and forgotten) when `owner` is a hold granted and not yet released.
  bool take(const std::string& owner);

 private:
  std::mutex m_;
  std::unordered_set<std::string> owners_;
};

/// How long a connection that owes replies may sit idle before the flush reads them.
constexpr milliseconds flush_after{10};

}  // namespace sqlock::redis::detail
