// The etcd v3 requests the lock queue builds (etcd_queue.cpp, etcd_queue_admin.cpp): ranges of
// keys by prefix and creation order, and the key-values of a range response.
#pragma once

#include <cstdint>
#include <string>

#include "etcd_connection.hpp"

namespace sqlock::etcd::detail {

/// A revision or lease id as etcd's JSON carries it (a decimal string).
inline std::string decimal(std::int64_t v) {
  return std::to_string(v);
}

/// The keys from `from` up to `to` (exclusive).
inline json range_of(const std::string& from, const std::string& to) {
  return {{"key", b64(from)}, {"range_end", b64(to)}};
}

/// The keys under `pfx` in creation `order` ("ASCEND", "DESCEND"), at most `limit` (0: all).
inline json by_creation(const std::string& pfx, const char* order, int limit = 0) {
  json r = range_of(pfx, prefix_end(pfx));
  r["sort_order"] = order;
  r["sort_target"] = "CREATE";
  if (limit > 0) r["limit"] = std::to_string(limit);
  return r;
}

/// The key-values of a range response (none when it has no "kvs").
inline const json& kvs_of(const json& range_response) {
  static const json none = json::array();
  auto it = range_response.find("kvs");
  return it == range_response.end() ? none : *it;
}

/// Every key of the queue `pfx`, first created first.
inline json all_of(const std::string& pfx) {
  return by_creation(pfx, "ASCEND");
}

}  // namespace sqlock::etcd::detail
