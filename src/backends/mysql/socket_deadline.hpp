// Deadlines for Connector/C++ 1.1 calls. The connector's read/write timeouts are whole seconds
// fixed at connect, and it does not hand out its socket; so the driver finds the socket a new
// connection opened (the one socket descriptor that appeared during the connect with the
// server's address as its peer, identified by inode) and sql::socket_watchdog shuts it down
// when a call's deadline passes. A connection whose socket was shut down is dead: the driver
// closes it.
#pragma once

#include <chrono>
#include <set>
#include <string>

#include "sql/socket_watchdog.hpp"

namespace sqlock::mysql::detail {

/// The socket inodes open in this process now ("socket:[N]" links in /proc/self/fd).
std::set<unsigned long> socket_inodes();

/// The descriptor of a socket opened since `before` was taken whose peer is TCP port `port` or
/// the Unix socket `unix_path` (when not empty); -1 unless exactly one matches.
int new_socket(const std::set<unsigned long>& before, int port, const std::string& unix_path);

/// The watchdog that shuts the found socket down at a call's deadline (shared with SOCI).
using sql::watched_call;

}  // namespace sqlock::mysql::detail
