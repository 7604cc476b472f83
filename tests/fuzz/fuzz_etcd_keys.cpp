// libFuzzer target: the etcd backend's decoding of a range response's kvs (etcd_kinds.hpp) and its
// lock-name encoding. Input that parses as a JSON array is given to keys_of() as it is, and
// again with each object's "key" and "value" base64-encoded as etcd sends them (a value that is
// no string as its JSON text); keys_of() returns or throws sqlock::error, nothing else. For a
// decoded queue, turn_of() follows etcd_kinds.hpp: the first key holds, an exclusive key only when
// first, a shared or permit key only behind keys of its own kind (a permit behind fewer than
// its N), and a waiter watches one or more keys earlier in the queue. encode_name() of the
// input round-trips through decode_name() and has no '/'; decode_name() of it decodes or throws
// sqlock::error.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "etcd_kinds.hpp"
#include "queue_rules.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/etcd/etcd.hpp"

using namespace sqlock;
using namespace sqlock::etcd::detail;

namespace {

void check_turns(const std::vector<queue_key>& q) {
  for (std::size_t i = 0; i < q.size(); ++i) {
    const auto& me = q[i];
    if ((me.kind == lock_kind::permit) != (me.permits > 0)) std::abort();
    const turn t = turn_of(q, i);
    if (t.holds != t.watch.empty()) std::abort();
    for (const auto& w : t.watch)
      if (std::none_of(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(i),
                       [&](const queue_key& k) { return k.key == w; }))
        std::abort();
    if (t.holds != sqlock::fuzz::holds(q, i)) std::abort();
  }
}

// `kvs` with each object's key and value as etcd sends them: base64.
json as_sent(const json& kvs) {
  json out = json::array();
  for (const auto& kv : kvs) {
    json k = kv;
    if (k.is_object()) {
      if (auto it = k.find("key"); it != k.end() && it->is_string())
        *it = b64(it->get<std::string>());
      if (auto it = k.find("value"); it != k.end())
        *it = b64(it->is_string() ? it->get<std::string>() : it->dump());
    }
    out.push_back(std::move(k));
  }
  return out;
}

void check_kvs(const json& kvs) {
  try {
    check_turns(keys_of(kvs));
  } catch (const sqlock::error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  json j = json::parse(text, nullptr, false);
  if (j.is_array()) {
    check_kvs(j);
    check_kvs(as_sent(j));
  }
  if (!text.empty()) {
    std::string enc = sqlock::etcd::encode_name(text);
    if (enc.find('/') != std::string::npos || sqlock::etcd::decode_name(enc) != text) std::abort();
    try {
      (void)sqlock::etcd::decode_name(text);
    } catch (const sqlock::error&) {
    }
  }
  return 0;
}
