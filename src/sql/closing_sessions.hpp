// Closing a connection ends the client's side at once, but the server's session lives on until
// the server has read the end (and finished a statement it was running): a replacement opened
// meanwhile makes the server see one session more than the client's connection budget. So a
// driver keeps a duplicate of a closed connection's socket, shuts its writing side (the server
// reads the end even when the library sent no goodbye), and hands it here: one thread of the
// process waits for the server to close its end (or a bound to pass) and then tells the driver,
// which counts the connection as open until then (connection_counter::reserve waits for it).
// A socket a deadline watchdog has already shut down both ways (socket_watchdog.hpp) reads its
// end at once whatever the server does, so for it the thread reads the TCP state instead: the
// server's end has come once the socket left FIN-WAIT (the server's FIN, or the reset this
// side answers to what the server sent after the shutdown); a Unix socket in that state counts
// until closing_bound.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace sqlock::sql {

/// The longest a closed connection counts as open while its server session has not ended (a
/// frozen server, a statement blocked in it).
inline constexpr std::chrono::milliseconds closing_bound{5000};

class closing_sessions {
 public:
  /// The process's instance (its thread starts with the first add() and runs until the
  /// process ends; a child after fork() has its own: process_instance.hpp).
  static closing_sessions& instance();
  closing_sessions() = default;  ///< Use instance().

  /// Takes `fd` (a duplicate of a closed connection's socket; closed here) and calls `ended`
  /// on this object's thread once the server has closed its end or closing_bound has passed.
  /// `shut_down`: the socket was shut down both ways already (a deadline watchdog fired).
  void add(int fd, std::function<void()> ended, bool shut_down = false);

  closing_sessions(const closing_sessions&) = delete;
  closing_sessions& operator=(const closing_sessions&) = delete;

 private:
  struct entry {
    int fd;
    std::chrono::steady_clock::time_point until;
    std::function<void()> ended;
    bool shut_down;  // watched by its TCP state (see the top of this file)
  };
  void loop();
  void wake();

  std::mutex m_;
  std::vector<entry> pending_;  // handed over, not yet polled by the thread
  int pipe_[2] = {-1, -1};      // wakes the thread: a new socket
  std::thread thread_;
};

}  // namespace sqlock::sql
