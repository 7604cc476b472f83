// The ZooKeeper backend: fair (FIFO), herd-free locks on ephemeral sequential znodes, bound to
// one ZooKeeper session per backend object (the lease is the session, not a timer).
// URL:
// zookeeper://[user:password@]h1:p1,h2:p2[/root]?session_timeout=10s&connect_timeout=10s&timeout=5s
//   &acl=open|creator&compat=kazoo|curator|curator-rw
// A lock named N lives at <root>/locks/<znode_name(N)> (a container node, removed by the server
// once empty); each acquisition is a child "n-<owner>-<sequence>" (shared: "r-", one of N
// permits: "p<N>-") whose data is the holder description. The lowest sequence holds exclusively;
// shared nodes hold with only shared nodes ahead, permits with fewer than N permits ahead; an
// exclusive waiter watches only its immediate predecessor.
// The fencing token is the creation zxid of the winning node. With compat= the lock named N is the
// znode <root>/N (root "/" when the URL has no path) and its children are named and ordered as
// the peer's recipe names and orders them. See docs/backends/zookeeper.md and docs/interop.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "sqlock/backend.hpp"
#include "sqlock/export.hpp"

namespace sqlock::zookeeper {

/// Options of a ZooKeeper store (an aggregate: use designated initialisers).
struct options {
  std::string hosts = "127.0.0.1:2181";  ///< "h1:p1,h2:p2" as the C client takes it; never empty
  std::string root = "/sqlock";          ///< base path of sqlock's znodes; created when missing
  milliseconds session_timeout{10000};   ///< requested session timeout; the server may clamp it
  milliseconds connect_timeout{0};       ///< longest wait for a session; 0 = session_timeout
  milliseconds timeout{5000};            ///< longest one request may take without a caller
                                         ///< deadline (list, force_release, lock())
  std::string user{};                    ///< digest user ("" = no authentication)
  std::string password{};                ///< digest password (with `user`)
  bool creator_acl = false;              ///< create znodes readable/writable by `user` only
  std::string compat{};                  ///< "" = sqlock's layout; a peer's layout: "kazoo"
                                         ///< (Lock, ReadLock, WriteLock), "curator"
                                         ///< (InterProcessMutex) or "curator-rw"
                                         ///< (InterProcessReadWriteLock): the lock named N is
                                         ///< the znode `ROOT/N` with the peer's children
  bool async_release = false;            ///< true: unlock() returns once the delete is sent
                                         ///< (URL release=async); false: once the server
                                         ///< answered it (release=wait)
};

/// Starts a session without waiting for it: every call waits for the session within its own
/// deadline (at most connect_timeout), then creates `root`/locks when missing. Throws
/// config_error for bad options; calls throw connection_error when no server answers in time.
SQLOCK_API std::shared_ptr<backend> open(const options& opts);

/// Counters of one ZooKeeper backend object (for tests, monitoring and the docs' claims).
struct statistics {
  std::uint64_t sessions = 0;            ///< sessions established (1 + reconnects after expiry)
  std::uint64_t expirations = 0;         ///< sessions the server expired (or closed) under us
  std::uint64_t watch_events = 0;        ///< watch events that woke a waiting thread
  std::uint64_t woken_not_first = 0;     ///< watch wake-ups after which the waiter still waited
  std::uint64_t waiting = 0;             ///< waiters blocked on a predecessor watch right now
  std::uint64_t nodes_created = 0;       ///< sequential nodes created
  std::uint64_t lost_replies_found = 0;  ///< creates whose reply was lost but whose node was found
  std::uint64_t connection_losses = 0;   ///< calls that saw a connection loss and were retried
};

/// Counters of `b`; usage_error when `b` is not a ZooKeeper backend.
SQLOCK_API statistics stats(const backend& b);

/// Session id and password of the current session of `b` (lets a test or an operator open a
/// second handle on the same session, e.g. to expire it). usage_error when not a ZooKeeper
/// backend; connection_error when it has no session.
struct session_credentials {
  std::int64_t id = 0;     ///< session id
  std::string password{};  ///< 16 raw password bytes
  int timeout_ms = 0;      ///< negotiated session timeout
};
/// The current session's credentials (see session_credentials).
SQLOCK_API session_credentials current_session(backend& b);

/// Ends the session of `b` at once: waits in progress end (connection_error), the session's
/// queue nodes and holds are deleted on the server now rather than at the session timeout, and
/// later calls throw connection_error. For a process that must exit while a thread waits (a
/// signal-handling thread, before _exit()). Destroying the backend does the same. usage_error
/// when `b` is not a ZooKeeper backend.
SQLOCK_API void close(backend& b);

/// The znode name a lock name is stored under: bytes outside [A-Za-z0-9_.:@+=,~-] become %XX
/// (and a name of only dots is fully escaped); reversible with lock_name().
SQLOCK_API std::string znode_name(std::string_view lock_name);

/// The lock name of a znode name made by znode_name(); empty for any other znode name.
SQLOCK_API std::optional<std::string> lock_name(std::string_view znode);

}  // namespace sqlock::zookeeper
