// The kinds of request in one etcd lock queue and who among them holds. Every key of a name
// (`<prefix>/<encoded name>/<lease hex>`) is ordered by its create revision; its value says what
// it asks for (JSON: owner, holder, kind, permits; etcdctl's keys have an empty value and are
// exclusive). Who holds follows the queue rule of core/queue_rule.hpp; a permit behind N permits
// watches every key before it. Internal.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "etcd_connection.hpp"
#include "sqlock/backend.hpp"

namespace sqlock::etcd::detail {

/// One key of a queue as it was read.
struct queue_key {
  std::string key;            ///< full key
  std::int64_t revision = 0;  ///< create revision
  std::int64_t lease = 0;     ///< its lease (0 = none)
  std::string owner, holder;  ///< from the value ("" for etcdctl's keys)
  lock_kind kind = lock_kind::exclusive;
  std::uint32_t permits = 0;  ///< kind permit: the N it was made with
};

/// The value a request's key carries.
std::string value_for(const lock_request& req);
/// The key a range response's kv stands for. A value that is not what sqlock writes reads as
/// etcdctl's (exclusive, no owner); backend_error for a malformed kv (no object, a key or value
/// that is no base64 string, a revision or lease that is no 64-bit integer).
queue_key key_of(const json& kv);
/// The keys of a range response's kvs (null = none), in the order given; backend_error as
/// key_of(), or when `kvs` is no array.
std::vector<queue_key> keys_of(const json& kvs);

/// Where key `i` of queue `q` (create-revision order) stands.
struct turn {
  bool holds = false;              ///< it holds now
  std::vector<std::string> watch;  ///< else the keys any of whose deletion may let it hold
};
/// The turn of key `i` of `q`.
turn turn_of(const std::vector<queue_key>& q, std::size_t i);

/// Throws config_error when a permit key before key `i` of `q` was made with another N than
/// `req` (the first request of an idle name sets N). Nothing for other kinds.
void check_permits(const std::vector<queue_key>& q, std::size_t i, const lock_request& req);

}  // namespace sqlock::etcd::detail
