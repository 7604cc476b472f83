// The lock queue's administrative reads and writes: list, waiting requests, forced release and
// the member check (see etcd_queue.hpp).
#include <map>

#include "etcd_kinds.hpp"
#include "etcd_queue.hpp"
#include "etcd_requests.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/url.hpp"

namespace sqlock::etcd::detail {

std::map<std::string, std::vector<queue_key>> queue::queues_of(std::string_view name_prefix,
                                                               steady_time deadline) {
  const std::string base = prefix_.empty() ? std::string() : prefix_ + "/";
  const std::string from = base + encode_name(name_prefix);
  json req = range_of(from, prefix_end(from));
  req["sort_order"] = "ASCEND";
  req["sort_target"] = "CREATE";
  auto r = gw_.call("kv/range", req, deadline);
  std::map<std::string, std::vector<queue_key>> queues;
  for (const auto& kv : kvs_of(r)) {
    auto k = key_of(kv);
    auto slash = k.key.rfind('/');
    if (slash == std::string::npos || slash < base.size()) continue;
    queues[k.key.substr(base.size(), slash - base.size())].push_back(std::move(k));
  }
  return queues;
}

namespace {
// The lock name an encoded key segment stands for; the segment itself for a key sqlock did not
// write.
std::string name_of_segment(const std::string& encoded) {
  try {
    return decode_name(encoded);
  } catch (const config_error&) {
    return encoded;
  }
}
}  // namespace

std::vector<waiting_request> queue::waiting(std::string_view name_prefix, steady_time deadline) {
  std::vector<waiting_request> out;
  for (const auto& [encoded, q] : queues_of(name_prefix, deadline)) {
    std::uint32_t position = 0;
    for (std::size_t i = 0; i < q.size(); ++i) {
      if (turn_of(q, i).holds) continue;
      const auto& k = q[i];
      waiting_request w;
      w.name = name_of_segment(encoded);
      w.owner = k.owner;
      w.holder = k.holder.empty() ? "lease " + k.key.substr(k.key.rfind('/') + 1) : k.holder;
      w.kind = k.kind;
      w.permits = k.permits;
      w.position = ++position;  // etcd keeps no time of a key: `since` stays unknown
      out.push_back(std::move(w));
    }
  }
  return out;
}

std::vector<lock_status> queue::list(std::string_view name_prefix, steady_time deadline) {
  std::vector<lock_status> out;
  for (const auto& [encoded, q] : queues_of(name_prefix, deadline)) {
    for (std::size_t i = 0; i < q.size(); ++i) {
      if (!turn_of(q, i).holds) continue;  // a waiter
      const auto& k = q[i];
      lock_status s;
      s.name = name_of_segment(encoded);
      s.owner = k.owner;
      s.holder = k.holder.empty() ? "lease " + k.key.substr(k.key.rfind('/') + 1) : k.holder;
      s.fence = static_cast<std::uint64_t>(k.revision);
      s.mode = "lease";
      s.kind = k.kind;
      s.permits = k.permits;
      if (k.lease != 0) {
        auto t = gw_.call("lease/timetolive", {{"ID", decimal(k.lease)}}, deadline);
        auto ttl = num(t, "TTL");
        if (ttl > 0) {
          auto now = std::chrono::duration_cast<milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
          s.expires_at = format_utc_ms(now + ttl * 1000);  // display only: the server's TTL
        }
      }
      out.push_back(std::move(s));
    }
  }
  return out;
}

bool queue::delete_holder(const std::string& name, steady_time deadline) {
  const std::string pfx = lock_prefix(prefix_, name);
  auto q = keys_of(kvs_of(gw_.call("kv/range", all_of(pfx), deadline)));
  bool deleted = false;
  for (std::size_t i = 0; i < q.size(); ++i) {
    if (!turn_of(q, i).holds) continue;
    json cmp = {{"key", b64(q[i].key)},
                {"target", "CREATE"},
                {"result", "EQUAL"},
                {"create_revision", decimal(q[i].revision)}};
    json txn = {{"compare", json::array({cmp})},
                {"success", json::array({{{"request_delete_range", {{"key", b64(q[i].key)}}}}})}};
    deleted |= gw_.call("kv/txn", txn, deadline).value("succeeded", false);
  }
  return deleted;
}

void queue::ping(steady_time deadline) {
  json req = range_of(prefix_, prefix_end(prefix_));
  req["count_only"] = true;
  gw_.call("kv/range", req, deadline);
}

}  // namespace sqlock::etcd::detail
