// The etcd backend (`etcd://[user:pass@]h1:2379,h2:2379/prefix?...`): locks laid out exactly
// as etcd's own concurrency.Mutex lays them out, so `etcdctl lock <prefix>/<name>` and sqlock
// exclude each other. A hold is the key `<prefix>/<encoded name>/<lease id in hex>` attached to
// an etcd lease the client keeps alive; the holder is the key with the lowest create revision
// under `<prefix>/<encoded name>/`, a waiter watches the key created just before its own (fair,
// FIFO by revision, no herd), and the fence is the hold's create revision, which rises across
// leader changes. The client speaks etcd's v3 API over gRPC (one HTTP/2 channel per member), or
// through the JSON gateway etcd serves under /v3/ on its client port (`transport=json`).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sqlock/backend.hpp"
#include "sqlock/export.hpp"

namespace sqlock::etcd {

/// One etcd member's client endpoint.
struct endpoint {
  std::string host = "127.0.0.1";  ///< host name or address
  int port = 2379;                 ///< client port
};

/// How the client talks to the members.
enum class transport_kind {
  grpc,  ///< etcd's gRPC API over HTTP/2: one channel per member, calls and streams on it
  json,  ///< the v3 JSON gateway over HTTP/1.1 (for members that expose only the gateway)
};

/// Options of an etcd store (an aggregate: use designated initialisers).
struct options {
  std::vector<endpoint> endpoints{};  ///< members to try in order (failover); empty = config_error
  std::string prefix = "sqlock";      ///< key prefix, without a trailing '/'
  std::string user{};                 ///< user for etcd authentication; "" = no authentication
  std::string password{};             ///< password of `user`
  milliseconds timeout{5000};         ///< longest one request may take (> 0)
  bool tls = false;                   ///< https instead of http
  std::string ca_file{};              ///< TLS: CA bundle that signed the members' certificates
  std::string cert_file{};            ///< TLS: client certificate (mutual TLS), "" = none
  std::string key_file{};             ///< TLS: the client certificate's private key
  transport_kind transport = transport_kind::grpc;  ///< the wire (URL `transport=`)
  /// true (URL `release=async`): unlock() returns once the key's deletion is handed to a
  /// background sender, which sends it beside the caller's next request; the same client's next
  /// acquire of that name waits for it first.
  bool async_release = false;
};

/// Opens a store. Throws config_error for bad options; connects lazily.
SQLOCK_API std::shared_ptr<backend> open(const options& opts);

/// The escaped form of a lock name inside keys: '/', '%' and bytes below 0x20 or 0x7F become
/// `%XX`, so that no name's keys fall under another name's prefix; every other byte (printable
/// ASCII, UTF-8) stays. Prefix-preserving and injective.
SQLOCK_API std::string encode_name(std::string_view name);

/// Inverse of encode_name(); config_error on a malformed escape.
SQLOCK_API std::string decode_name(std::string_view encoded);

/// The key prefix of lock `name`, `<prefix>/<encoded name>/`: what `etcdctl lock` takes
/// (without the trailing '/') to contend for the same lock.
SQLOCK_API std::string lock_prefix(std::string_view prefix, std::string_view name);

}  // namespace sqlock::etcd
