// The kinds of request in one etcd lock queue (see etcd_kinds.hpp).
#include "etcd_kinds.hpp"

#include "core/queue_rule.hpp"
#include "sqlock/errors.hpp"

namespace sqlock::etcd::detail {

std::string value_for(const lock_request& req) {
  json v = {{"owner", req.owner}, {"holder", req.holder}};
  if (req.kind != lock_kind::exclusive) v["kind"] = to_string(req.kind);
  if (req.kind == lock_kind::permit) v["permits"] = req.permits;
  return v.dump();
}

namespace {

// The bytes of member `name` of a kv (base64 in the reply); "" when absent. backend_error when
// it is no string or no base64.
std::string bytes_of(const json& kv, const char* name) {
  auto it = kv.find(name);
  if (it == kv.end() || it->is_null()) return {};
  if (!it->is_string())
    throw backend_error(std::string("etcd sent a key-value whose '") + name + "' is no string");
  return unb64(it->get_ref<const std::string&>());
}

// Member `name` of a key's value; "" when absent or no string (a value another program wrote).
std::string text_of(const json& v, const char* name) {
  auto it = v.find(name);
  return it != v.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

queue_key key_of(const json& kv) {
  if (!kv.is_object()) throw backend_error("etcd sent a key-value that is no JSON object");
  queue_key k;
  k.key = bytes_of(kv, "key");
  k.revision = num(kv, "create_revision");
  k.lease = num(kv, "lease");
  json v = json::parse(bytes_of(kv, "value"), nullptr, false);
  if (!v.is_object()) return k;
  k.owner = text_of(v, "owner");
  k.holder = text_of(v, "holder");
  const std::string kind = text_of(v, "kind");
  if (kind == "shared") k.kind = lock_kind::shared;
  auto n = v.find("permits");
  if (kind == "permit" && n != v.end() && n->is_number_unsigned() && n->get<std::uint64_t>() > 0 &&
      n->get<std::uint64_t>() <= UINT32_MAX) {
    k.kind = lock_kind::permit;
    k.permits = n->get<std::uint32_t>();
  }
  return k;
}

std::vector<queue_key> keys_of(const json& kvs) {
  if (!kvs.is_array() && !kvs.is_null()) throw backend_error("etcd sent kvs that are no array");
  std::vector<queue_key> out;
  for (const auto& kv : kvs) out.push_back(key_of(kv));
  return out;
}

turn turn_of(const std::vector<queue_key>& q, std::size_t i) {
  const auto s = queue_rule::standing_of(q, i);
  if (s.holds) return {true, {}};
  if (!s.any_before) return {false, {q[s.wait_for].key}};
  turn t;  // behind N permits: any of them may leave first
  for (std::size_t j = 0; j < i; ++j) t.watch.push_back(q[j].key);
  return t;
}

void check_permits(const std::vector<queue_key>& q, std::size_t i, const lock_request& req) {
  queue_rule::check_permit_count(q, i, req.kind, req.permits, req.name, "etcd");
}

}  // namespace sqlock::etcd::detail
