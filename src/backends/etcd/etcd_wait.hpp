// The deletions under a client's prefix as one watch stream sees them, shared by everything the
// client does: the backend learns at once that a key it holds was deleted (lease expired or
// revoked, `sqlock release --force`), and a waiter is woken by the deletion of the key it waits
// for. The stream starts at the current revision and is confirmed by etcd before anyone relies
// on it: etcd serves a watch that starts at a past revision from its catch-up loop, every
// 100 ms, so a stream started in the past would deliver late in its first moments.
// When the stream ends by itself (its member stopped or lost its leader, the connection broke),
// the deletion watch's own restarter thread opens the next one at once (on any member that confirms
// it, pausing with capped backoff while none does) and then tells the backend (`on_resumed`), which
// reads what the stream could not deliver in the gap.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "etcd_connection.hpp"

namespace sqlock::etcd::detail {

/// The keys deleted from one lock's queue since a waiter subscribed, as the deletion watch delivers
/// them. A key name comes back (a lease reused for the next hold puts the same key again): a
/// deletion tells about the key a read saw only when its revision is later than that read's.
struct deletions {
  std::mutex m;                              ///< guards keys and wake
  std::condition_variable_any cv;            ///< notified on every delivery (a waiter's stop
                                             ///< ends its wait too)
  std::map<std::string, std::int64_t> keys;  ///< deleted key (full) -> its latest deletion
  /// An asynchronous waiter's one-shot wake-up (acquisition::arm): taken and called, outside
  /// the locks, by the next delivery or the end of the stream.
  std::function<void()> wake;
};

/// The confirmed stream a caller relies on: deletions after `revision` are delivered while the
/// stream numbered `generation` lasts.
struct confirmation {
  std::uint64_t generation = 0;  ///< which stream (a restarted stream has another number)
  std::int64_t revision = 0;     ///< the store's revision when the stream started
};

class deletion_watch {
 public:
  /// Watches every key under `prefix` + "/"; `on_delete` gets each deleted key (from the
  /// stream's reader thread). `on_resumed` is called (from the restarter thread) once a stream
  /// that ended by itself has been replaced by a confirmed one, with a deadline: deletions in
  /// the gap were not delivered. When it throws an error, the deletion watch calls it again after a
  /// pause.
  deletion_watch(gateway& gw, const std::string& prefix,
                 std::function<void(const std::string&)> on_delete,
                 std::function<void(steady_time)> on_resumed);
  ~deletion_watch();
  deletion_watch(const deletion_watch&) = delete;
  deletion_watch& operator=(const deletion_watch&) = delete;

  /// Starts the stream when none runs, without waiting for etcd to confirm it.
  void start(steady_time deadline);
  /// Waits until a stream is confirmed (replacing it, on the next member, when it ended or its
  /// member did not start it within one member's attempt); connection_error when no member
  /// confirms one by `deadline`.
  confirmation confirmed(steady_time deadline);
  /// True while the stream numbered `generation` runs.
  bool live(std::uint64_t generation);
  /// Ends the stream and the restarter for good: no more calls of `on_delete` or `on_resumed`
  /// once it returns.
  void stop();

  /// Delivers into `into` the deletions of keys that start with `pfx` while it exists.
  class subscription {
   public:
    subscription(deletion_watch& f, const std::string& pfx, deletions& into);
    ~subscription();
    subscription(const subscription&) = delete;
    subscription& operator=(const subscription&) = delete;

   private:
    deletion_watch& f_;
    std::multimap<std::string, deletions*>::iterator it_;
  };

 private:
  // With m_ held: opens the next stream (numbered anew, on the gateway's preferred member) in
  // place of the current one, which it returns for the caller to stop once m_ is released.
  std::shared_ptr<stream> open(steady_time deadline);
  void deliver(const json& msg, std::uint64_t generation);
  // The stream numbered `generation` ended by itself (its reader thread calls this).
  void ended(std::uint64_t generation);
  // live_generation_ becomes 0 if it still names `generation`.
  void end_generation(std::uint64_t generation);
  // The restarter thread: replaces a stream that ended by itself, then calls on_resumed_.
  void restart_loop();

  gateway& gw_;
  std::string base_;  // "<prefix>/"
  std::function<void(const std::string&)> on_delete_;
  std::function<void(steady_time)> on_resumed_;
  std::mutex m_;  // stream_, closed_, and changes of generation_ (read without it too)
  std::shared_ptr<stream> stream_;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<std::uint64_t> live_generation_{0};  // the current stream's while it runs, else 0
  bool closed_ = false;                            // stop() was called: no stream opens any more
  // started_at_ has its own mutex: a reader thread that records it never waits for m_.
  std::mutex started_m_;         // started_at_; taken after m_ when both are
  std::condition_variable cv_;   // with started_m_: a stream started, or ended
  std::int64_t started_at_ = 0;  // the current stream's start revision; 0 = not confirmed yet
  std::mutex restart_m_;         // the fields below up to subs_m_
  std::condition_variable restart_cv_;
  bool restart_wanted_ = false;  // a current stream ended by itself since the last restart
  bool restart_closed_ = false;  // stop() was called: the restarter ends
  std::thread restarter_;        // started by the first stream that ends by itself
  std::mutex subs_m_;
  std::multimap<std::string, deletions*> subs_;  // queue prefix -> a waiter's deletions
};

}  // namespace sqlock::etcd::detail
