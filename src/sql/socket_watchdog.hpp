// Bounds a blocking client call by a deadline when the client library has none of its own
// (Connector/C++ 1.1, and SOCI's PostgreSQL and MySQL backends, block in their reads and
// writes): the caller arms the watchdog with the connection's socket before the call and
// disarms it after; at the deadline the watchdog shuts the socket down (shutdown(2), not close:
// the descriptor stays the client's), so the blocked read or write returns at once with an
// error. A connection whose socket was shut down is dead: its owner must drop it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>

namespace sqlock::sql {

/// One thread serving every armed call of the process.
class socket_watchdog {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  /// The process's watchdog (its thread starts with the first arm(); a child after fork() has
  /// its own: process_instance.hpp).
  static socket_watchdog& instance();

  /// Shuts `fd` down at `deadline` unless disarm(id) comes first; returns the id.
  std::uint64_t arm(int fd, time_point deadline);
  /// Stops watching call `id`; true when the deadline had already fired (the socket is dead).
  bool disarm(std::uint64_t id);

  socket_watchdog() = default;
  ~socket_watchdog();
  socket_watchdog(const socket_watchdog&) = delete;
  socket_watchdog& operator=(const socket_watchdog&) = delete;

 private:
  struct entry {
    int fd;
    time_point deadline;
    bool fired = false;
  };
  void loop();

  std::mutex m_;
  std::condition_variable cv_;
  std::map<std::uint64_t, entry> armed_;
  std::uint64_t next_ = 1;
  time_point wake_at_ = time_point::min();  // when the thread wakes next (min: not yet waiting)
  bool stop_ = false;
  std::thread thread_;
};

/// Arms the watchdog for one call (nothing when `fd` < 0 or there is no deadline) and disarms
/// it when destroyed or by finish(), which tells whether the deadline fired.
class watched_call {
 public:
  watched_call(int fd, socket_watchdog::time_point deadline);
  ~watched_call();
  watched_call(const watched_call&) = delete;
  watched_call& operator=(const watched_call&) = delete;
  /// Disarms; true when the deadline fired during the call (the socket is dead).
  bool finish();

 private:
  std::uint64_t id_ = 0;
};

}  // namespace sqlock::sql
