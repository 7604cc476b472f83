// Deadlines for Connector/C++ 1.1 calls. The connector's read/write timeouts are whole seconds
// fixed at connect, and it does not hand out its socket; so the driver finds the socket a new
// connection opened (the one socket descriptor that appeared during the connect with the
// server's address as its peer, identified by inode) and a watchdog thread shuts it down
// (shutdown(2): the descriptor stays the connector's) when a call's deadline passes, so the
// blocked read or write returns at once with an error. A connection whose socket was shut down
// is dead: the driver closes it.
#pragma once

#include <chrono>
#include <cstdint>
#include <set>
#include <string>

namespace sqlock::mysql::detail {

/// The socket inodes open in this process now ("socket:[N]" links in /proc/self/fd).
std::set<unsigned long> socket_inodes();

/// The descriptor of a socket opened since `before` was taken whose peer is TCP port `port` or
/// the Unix socket `unix_path` (when not empty); -1 unless exactly one matches.
int new_socket(const std::set<unsigned long>& before, int port, const std::string& unix_path);

/// Arms the process's watchdog for one call on `fd` (nothing when `fd` < 0): at `deadline` the
/// socket is shut down unless the call ended first.
class watched_call {
 public:
  watched_call(int fd, std::chrono::steady_clock::time_point deadline);
  ~watched_call();
  watched_call(const watched_call&) = delete;
  watched_call& operator=(const watched_call&) = delete;
  /// Disarms; true when the deadline fired during the call (the socket is dead).
  bool finish();

 private:
  std::uint64_t id_ = 0;
};

}  // namespace sqlock::mysql::detail
