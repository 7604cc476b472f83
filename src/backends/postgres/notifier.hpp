// LISTEN/NOTIFY for waiters: one listener connection per backend object, started by the first
// wait and served on the library's driver threads (sqlock::watch_descriptor for its socket,
// run_in_background for connecting and keep-alives: no thread of its own), keeping a bounded log
// of recent notifications (sequence number, name hash).
// Each waiting request gets a notify_wait (in its acquisition) holding the sequence number it has
// seen: it is taken when the wait is opened and again before every attempt, so a release that
// lands between a busy attempt and the wait wakes the wait at once. The listener connection is
// bounded like every other (connect and keep-alive by the I/O timeout) and waiters never wait
// on it: they wait on a condition variable until their own deadline or stop.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "sql/connection_counter.hpp"
#include "sqlock/backend.hpp"

namespace sqlock::postgres {
class pg_connection;
}

namespace sqlock::postgres {

/// The listener of one backend object.
class notifier {
 public:
  /// Listens on `channel` through connections to `conninfo`; exchanges bounded by `io_timeout`.
  /// `counter` (optional) counts the listener connection while it is open.
  /// `deaf_behind_proxy`: a connection that goes through a proxy (pooler.hpp) does not LISTEN;
  /// the notifier turns deaf instead (a pooler of unknown pool mode may drop notifications).
  notifier(std::string conninfo, std::string channel, milliseconds io_timeout,
           std::shared_ptr<sql::connection_counter> counter = nullptr,
           bool deaf_behind_proxy = false);
  ~notifier();
  notifier(const notifier&) = delete;
  notifier& operator=(const notifier&) = delete;

  /// True once the notifier found that it cannot listen (a proxy in between): waiters poll.
  bool deaf() const { return deaf_.load(std::memory_order_acquire); }
  /// The sequence number of the newest notification.
  std::uint64_t seq() const { return seq_.load(std::memory_order_acquire); }
  /// Starts the listener if it is not running (idempotent).
  void ensure_started();
  /// Returns when a notification for `name` (or for anything) newer than `since` is known, or
  /// at `until`.
  void wait(std::string_view name, std::uint64_t since, steady_time until,
            const std::stop_token& stop);
  /// The non-blocking form of wait() (acquisition::arm): true when such a notification is
  /// known already; otherwise keeps `wake` under `key` until the next notification for `name`
  /// (or for anything), which calls it once, on a driver thread.
  bool arm(std::string_view name, std::uint64_t since, const void* key, std::function<void()> wake);
  /// Drops the wake-up kept under `key` for `name`, if it is still kept.
  void disarm(std::string_view name, const void* key);

 private:
  // Whether a notification for hash `h` (or for anything) newer than `since` is known, or the
  // wait should end anyway; call with m_ held.
  bool heard(std::size_t h, std::uint64_t since) const;
  // Moves the wake-ups armed for hash `h` (0: all) into `out`; call with m_ held.
  void take_armed(std::size_t h, std::vector<std::function<void()>>& out);
  void push(std::size_t hash);
  // The listener's steps, each on a driver thread through gate_, one at a time (step_m_):
  // connect and LISTEN; read what the socket brought; prove an idle connection alive.
  void connect_step();
  void read_step();
  void keepalive_step(std::uint64_t generation);
  // With step_m_ held: the connection failed; connect again after a backoff.
  void reconnect_later();
  // With step_m_ held: has read_step() run when the socket has something to read.
  void watch_socket();
  // With step_m_ held: conn_ answered; logs the notifications it brought.
  void log_notifications();
  // Has keepalive_step(generation) run once conn_ has been idle for keepalive_every.
  void keep_alive_later(std::uint64_t generation);
  // Runs `step` on a driver thread at `when`, unless the notifier is gone by then.
  void later(steady_time when, void (notifier::*step)());

  const std::string conninfo_;
  const std::string channel_;
  const milliseconds io_timeout_;
  const std::shared_ptr<sql::connection_counter> counter_;
  const bool deaf_behind_proxy_;
  std::atomic<bool> deaf_{false};
  std::mutex m_;
  std::condition_variable_any cv_;  // waiters also end on their caller's stop
  std::deque<std::pair<std::uint64_t, std::size_t>> log_;
  // Armed wake-ups by name hash, then by their waits' keys.
  std::unordered_map<std::size_t, std::map<const void*, std::function<void()>>> armed_;
  std::atomic<std::uint64_t> seq_{0};
  bool stop_ = false;
  bool started_ = false;
  int stop_fd_ = -1;  // an eventfd the destructor writes: ends a connect or exchange under way
  std::shared_ptr<task_gate> gate_ = std::make_shared<task_gate>();  // the steps' way in
  // The listener's, under step_m_:
  std::mutex step_m_;
  std::unique_ptr<pg_connection> conn_;  // connected and listening, or null
  std::uint64_t generation_ = 0;         // of conn_: a keep-alive of an older one does nothing
  descriptor_watch readable_;            // of conn_'s socket
  steady_time last_heard_{};             // when conn_ last answered
  unsigned attempt_ = 0;                 // connections failed in a row
};

/// The notification wait of one waiting request on a notifying backend.
class notify_wait final {
 public:
  /// Starts the listener and takes the first snapshot.
  notify_wait(notifier& n, std::string name);
  /// Drops an armed wake-up.
  ~notify_wait();
  notify_wait(const notify_wait&) = delete;
  notify_wait& operator=(const notify_wait&) = delete;
  /// Called at the start of every attempt: notifications before it are seen by the attempt.
  void attempt_starts() { since_ = n_.seq(); }
  /// True when releases cannot wake this wait (the notifier turned deaf).
  bool deaf() const { return n_.deaf(); }
  /// Until a notification for the name since the last attempt started, `until` or a stop.
  void wait(steady_time until, const std::stop_token& stop) { n_.wait(name_, since_, until, stop); }
  /// The non-blocking form of wait(): true when a notification came already; otherwise `wake`
  /// is called once at the next one.
  bool arm(std::function<void()> wake) { return n_.arm(name_, since_, this, std::move(wake)); }
  /// Drops the wake-up of arm().
  void disarm() noexcept { n_.disarm(name_, this); }

 private:
  notifier& n_;
  std::string name_;
  std::uint64_t since_ = 0;
};

}  // namespace sqlock::postgres
