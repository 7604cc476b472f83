// Releases that do not wait (URL option release=async): a release is handed to one background
// thread, started by the first one, which sends it while the caller goes on, so that it
// travels beside the caller's next request instead of before it. Releases are sent one after
// another in the order they were handed over; a client that hands over more than max_pending
// waits for one of them to end (backpressure). The same client's next acquire of a name whose
// release is still on its way waits for it first (settled()), so that it never queues behind
// its own release and a try_lock() right after an unlock() finds the name free. What a release
// that fails becomes is the sending function's business (the core hands it to its orphan
// releases, etcd revokes the key's lease). Header-only: the core's client uses it, and so does
// a backend module that sends its own (etcd), without exporting it from the core library.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "sqlock/types.hpp"

namespace sqlock::detail {

class release_sender {
 public:
  /// Sends one release by the deadline it is given. It should not throw; what it throws is
  /// dropped (the release then ends as one without an answer: its lease ends it).
  using send_fn = std::function<void(steady_time deadline)>;

  /// How many releases may be on their way before post() waits.
  static constexpr std::size_t max_pending = 64;

  /// `timeout` bounds each release and the flush at destruction.
  explicit release_sender(milliseconds timeout) : timeout_(timeout) {}
  /// Sends what is still pending (within one timeout in all), then stops the thread; what is
  /// left then ends with its lease, which nobody renews any more.
  ~release_sender() {
    {
      std::lock_guard g(m_);
      stop_ = true;
      flush_until_ = std::chrono::steady_clock::now() + timeout_;
    }
    cv_.notify_all();
    if (th_.joinable()) th_.join();
  }
  release_sender(const release_sender&) = delete;
  release_sender& operator=(const release_sender&) = delete;

  /// Hands over the release of `name`; while max_pending releases are on their way, waits for
  /// one of them to end (until `deadline`, then hands it over anyway). Throws only what
  /// allocating or starting the thread throws (the caller then releases by itself).
  void post(std::string name, send_fn send, steady_time deadline) {
    std::unique_lock lk(m_);
    cv_.wait_until(lk, deadline, [&] { return count_ < max_pending; });
    if (!th_.joinable()) th_ = std::thread([this] { run(); });
    queued_.push_back({std::move(name), std::move(send)});
    try {
      ++on_way_[queued_.back().name];
    } catch (...) {
      queued_.pop_back();
      throw;
    }
    ++count_;
    lk.unlock();
    cv_.notify_all();
  }

  /// Waits until no release of `name` is on its way; false when `deadline` came first.
  bool settled(std::string_view name, steady_time deadline) {
    std::unique_lock lk(m_);
    return cv_.wait_until(lk, deadline, [&] { return on_way_.find(name) == on_way_.end(); });
  }

 private:
  struct pending {
    std::string name;
    send_fn send;
  };

  // Sends the queued releases one after another, off the callers' paths; after the stop, what
  // is still queued is sent before the thread ends, within one timeout in all.
  void run() {
    std::unique_lock lk(m_);
    for (;;) {
      cv_.wait(lk, [&] { return stop_ || !queued_.empty(); });
      const auto now = std::chrono::steady_clock::now();
      if (queued_.empty() || (stop_ && now >= flush_until_)) return;
      pending p = std::move(queued_.front());
      queued_.pop_front();
      const auto deadline = stop_ ? std::min(flush_until_, now + timeout_) : now + timeout_;
      lk.unlock();
      try {
        p.send(deadline);
      } catch (...) {
        // Dropped: see send_fn.
      }
      lk.lock();
      if (auto it = on_way_.find(p.name); it != on_way_.end() && --it->second == 0)
        on_way_.erase(it);
      --count_;
      cv_.notify_all();
    }
  }

  const milliseconds timeout_;
  std::mutex m_;
  std::condition_variable cv_;  // a release handed over, one ended, or the stop
  std::deque<pending> queued_;
  std::map<std::string, int, std::less<>> on_way_;  // by name: queued or being sent
  std::size_t count_ = 0;                           // releases queued or being sent
  bool stop_ = false;
  steady_time flush_until_{};  // once stopped: when sending what is left ends
  std::thread th_;             // started by the first post()
};

}  // namespace sqlock::detail
