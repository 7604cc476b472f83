// The Redis backend: locks in one Redis server (`redis://`) or in several independent masters
// with the Redlock algorithm (`redlock://h1:p1,h2:p2,...`). A hold is a key set with
// `SET key owner NX PX lease` inside a Lua script that also raises a per-lock fence counter in
// the same atomic step; renew and release are owner-checked scripts called with EVALSHA. Waiters
// are woken by pub/sub (a release publishes). Lock names of any bytes map to keys through a
// prefix-preserving escape that keeps the `{hash tag}` intact; the helpers below expose that
// mapping for administrators and tests.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sqlock/backend.hpp"
#include "sqlock/export.hpp"

namespace sqlock::redis {

/// One Redis server.
struct node_address {
  std::string host = "127.0.0.1";  ///< host name or address
  int port = 6379;                 ///< TCP port
};

/// Options of a Redis store (an aggregate: use designated initialisers).
struct options {
  std::vector<node_address> nodes{};  ///< one server, or the Redlock masters; empty = config_error
  bool redlock = false;               ///< Redlock over `nodes` (quorum N/2+1) instead of one server
  std::string user{};                 ///< ACL user for AUTH; "" = only the password (or no AUTH)
  std::string password{};             ///< password for AUTH; "" = no AUTH
  int db = 0;                         ///< database number (SELECT); 0 = the default database
  std::string prefix = "sqlock";      ///< key prefix; letters, digits and `_.:/-` only
  milliseconds connect_timeout{0};    ///< TCP connect timeout; 0 = 2s (Redlock: 250ms per node)
  milliseconds timeout{0};  ///< reply timeout per command; 0 = 2s (Redlock: 250ms per node)
  std::size_t pool = 8;     ///< idle connections kept per server; 0 = 1
  std::string compat{};     ///< "" = sqlock's layout; "plain" = the peers' layout: the lock named
                            ///< N is the string key N holding the owner's token (redis-py Lock,
                            ///< redsync, node-redlock, DistributedLock.Redis); no fences, no
                            ///< shared locks or permits
  bool async_release = false;  ///< true: unlock() returns once the release is sent (its reply is
                               ///< read later); another client may find the lock busy a moment
};

/// Opens a store. Throws config_error for bad options; connects lazily.
SQLOCK_API std::shared_ptr<backend> open(const options& opts);

/// The escaped form of a lock name used inside keys: bytes that are special in a hash tag
/// (`{`, `}`), in SCAN patterns (`*?[]\`), `%`, and control bytes become `%XX`; all other bytes
/// (printable ASCII, UTF-8) stay as they are. Prefix-preserving and injective.
SQLOCK_API std::string encode_name(std::string_view name);

/// Inverse of encode_name(); config_error on a malformed escape.
SQLOCK_API std::string decode_name(std::string_view encoded);

/// Key holding the owner token of lock `name`: `<prefix>:{<encoded name>}:owner`.
SQLOCK_API std::string owner_key(std::string_view prefix, std::string_view name);

/// Key of the fence counter of lock `name` (never expires): `<prefix>:{<encoded name>}:fence`.
SQLOCK_API std::string fence_key(std::string_view prefix, std::string_view name);

/// Hash with fence, holder and acquisition time of the current hold: `<prefix>:{...}:info`.
SQLOCK_API std::string info_key(std::string_view prefix, std::string_view name);

/// Pub/sub channel a release of lock `name` publishes on: `<prefix>:{...}:released`.
SQLOCK_API std::string release_channel(std::string_view prefix, std::string_view name);

}  // namespace sqlock::redis
