// The pub/sub listener of the Redis backend: one per store, served on the library's driver
// threads (no thread of its own), that wakes the waiters of a lock when its release is published,
// and the interest a waiting request registers before each attempt, so that no release slips
// between a busy attempt and the wait after it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "redis_connection.hpp"
#include "sqlock/backend/background.hpp"

namespace sqlock::redis::detail {

/// Waiters of one store, shared by the listener and the interest registrations (which
/// may outlive the store: a wait state can be destroyed after it).
struct wait_registry {
  /// The waiters of one lock (by encoded name).
  struct waiter {
    std::condition_variable_any cv;  ///< notified when gen changes
    std::uint64_t gen = 0;           ///< bumped by every release message of this lock
    int count = 0;                   ///< registrations holding this entry
    /// Armed asynchronous waits (interest::arm), called once at the next bump of `gen`.
    std::map<const void*, std::function<void()>> wakers;
  };
  std::mutex m;                          ///< guards everything below
  std::condition_variable_any ready_cv;  ///< notified when `ready` or `stop` change
  int ready = 0;                         ///< servers whose subscription stands
  bool stop = false;                     ///< the listener is shutting down
  std::unordered_map<std::string, std::shared_ptr<waiter>> waiters;  ///< by encoded name
};

/// Interest in the releases of one lock, taken before an attempt is sent: a release published
/// after that moment bumps the generation it remembers, so no notification can slip between a
/// busy attempt and the wait that follows it.
class interest {
 public:
  /// Registers interest in encoded name `key`.
  interest(std::shared_ptr<wait_registry> reg, std::string key);
  /// Unregisters.
  ~interest();
  interest(const interest&) = delete;
  interest& operator=(const interest&) = delete;
  /// Waits until a release of the lock arrived since registration, a resubscription happened,
  /// `until` or `stop`. When no subscription stood at registration, returns as soon as one does.
  void wait(steady_time until, const std::stop_token& stop);
  /// Called at the start of every attempt: arm() looks for releases from then on.
  void attempt_starts();
  /// What arm() found.
  enum class armed { wake_armed, heard, cannot };
  /// The non-blocking form of wait() (acquisition::arm): `heard` when a release (or a
  /// resubscription) arrived since the last attempt started; `cannot` while no subscription
  /// stands (the caller backs off); else keeps `wake`, called once at the next release.
  armed arm(std::function<void()> wake);
  /// Drops the wake-up of arm().
  void disarm() noexcept;
  /// The registry this interest belongs to.
  const wait_registry* registry() const { return reg_.get(); }
  /// The encoded name.
  const std::string& key() const { return key_; }

 private:
  std::shared_ptr<wait_registry> reg_;
  std::string key_;
  std::shared_ptr<wait_registry::waiter> w_;
  std::uint64_t gen_ = 0;
  std::uint64_t seen_ = 0;  // gen when the last attempt started (arm())
  bool was_ready_ = false;
};

/// The pub/sub listener of one store: one subscriber connection per server (PSUBSCRIBE on the
/// release channels of the key prefix), reconnecting with backoff, its sockets watched on the
/// driver threads (sqlock::watch_descriptor) and its connects run there. A message
/// wakes the waiters of its lock; a (re)subscription wakes every waiter (releases during the
/// outage went unheard).
class subscriber {
 public:
  /// Starts subscribing. `channel_head`/`channel_tail` frame the encoded name in a channel.
  subscriber(std::vector<node_address> nodes, const settings& s, std::string channel_head,
             std::string channel_tail);
  /// Waits for a step under way (a connect within its I/O bound), then closes the connections.
  ~subscriber();
  subscriber(const subscriber&) = delete;
  subscriber& operator=(const subscriber&) = delete;

  /// Registers interest in the releases of encoded name `key` (before sending an attempt).
  std::unique_ptr<interest> watch(const std::string& key) {
    return std::make_unique<interest>(reg_, key);
  }
  /// The registry of waiters.
  const wait_registry* registry() const { return reg_.get(); }

 private:
  // One server's subscription; its steps run one at a time (m).
  struct link {
    explicit link(node_address a) : addr(std::move(a)) {}
    node_address addr;
    std::mutex m;
    redisContext* c = nullptr;  // subscribed, or null
    milliseconds backoff{0};
    descriptor_watch readable;  // of c's socket
  };
  // The steps of a link, on a driver thread through gate_: subscribe (again after a backoff
  // when it fails); read the messages its socket brought (a failure drops it).
  void subscribe_step(link& l);
  void read_step(link& l);
  // Runs `step` of `l` on a driver thread at `when`, unless the subscriber is gone by then.
  void later(steady_time when, link& l, void (subscriber::*step)(link&));
  // With l.m held.
  bool subscribe(link& l);
  void drop(link& l);
  void retry_later(link& l);
  void watch_socket(link& l);
  void on_message(std::string_view channel);
  void bump_all();

  std::vector<std::unique_ptr<link>> links_;
  const settings& s_;
  std::string head_, tail_;
  std::shared_ptr<wait_registry> reg_ = std::make_shared<wait_registry>();
  std::shared_ptr<task_gate> gate_ = std::make_shared<task_gate>();  // the steps' way in
};

}  // namespace sqlock::redis::detail
