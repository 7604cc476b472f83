// Releases that do not wait (URL option release=async): release() hands a key this client holds
// to one background thread, started by the first such release, which deletes it
// (queue::give_up) while the caller goes on, so that the deletion travels beside the caller's
// next request instead of before it. A deletion whose outcome is unknown ends as every release
// without an answer does (give_up revokes the key's lease in the background; at worst the lease
// ends at its TTL). The same client's next acquire of a name whose release is still on its way
// waits for it first (settled(), bounded by the acquire's deadline): it does not queue behind
// its own key, and a try_lock right after an unlock finds the name free as it would with
// release=wait. Internal.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "etcd_queue.hpp"

namespace sqlock::etcd::detail {

/// One release handed to the sender.
struct pending_release {
  std::string name;       ///< the lock name
  hold h;                 ///< the key to delete
  steady_time refreshed;  ///< when its lease was last extended
};

class release_sender {
 public:
  /// `send(r, deadline)` deletes the key of `r` by `deadline` (it may throw: the release then
  /// ends as give_up leaves it); `timeout` bounds each one and the flush at destruction.
  release_sender(std::function<void(const pending_release&, steady_time)> send,
                 milliseconds timeout);
  /// Sends what is still pending (within one timeout in all), then stops the thread.
  ~release_sender();
  release_sender(const release_sender&) = delete;
  release_sender& operator=(const release_sender&) = delete;

  /// Hands `r` over; while `max_pending` releases are on their way, waits for one of them to
  /// end (until `deadline`, then hands it over anyway).
  void post(pending_release r, steady_time deadline);
  /// Waits until no release of `name` is on its way; false when `deadline` came first.
  bool settled(std::string_view name, steady_time deadline);

  /// How many releases may be on their way before post() waits.
  static constexpr std::size_t max_pending = 64;

 private:
  void run();

  std::function<void(const pending_release&, steady_time)> send_;
  milliseconds timeout_;
  std::mutex m_;
  std::condition_variable cv_;  // a release handed over, one ended, or the stop
  std::deque<pending_release> queued_;
  std::map<std::string, int, std::less<>> on_way_;  // by name: queued or being sent
  std::size_t count_ = 0;                           // releases queued or being sent
  bool stop_ = false;
  steady_time flush_until_{};  // once stopped: when sending what is left ends
  std::thread th_;             // started by the first post()
};

}  // namespace sqlock::etcd::detail
