// libFuzzer target: the ZooKeeper lock queue as read back from the server (zookeeper_kinds.hpp).
// The input's lines are the children of a lock's parent node. sorted_queue() keeps exactly the
// children parse_node() accepts, lowest sequence first; for every node, turn_of() follows the
// rules of zookeeper_kinds.hpp: the first node holds, an exclusive node holds only when first and
// else watches its predecessor, a shared or permit node holds only behind nodes of its own kind
// (and a permit behind fewer than its N), and a waiter watches a node of another kind earlier in
// the queue, or "" (any change) only as a permit behind N permits. node_prefix() of a request whose
// owner is the first line, plus a 10-digit sequence, parses back to the request.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "queue_rules.hpp"
#include "sqlock/backend.hpp"
#include "zookeeper_kinds.hpp"

using namespace sqlock;
using namespace sqlock::zookeeper::detail;

namespace {

void check_turns(const std::vector<queue_node>& q) {
  for (std::size_t i = 0; i < q.size(); ++i) {
    const auto& me = q[i];
    const turn t = turn_of(q, i);
    if (i == 0 && !t.holds) std::abort();
    if (t.holds && !t.watch.empty()) std::abort();
    if (t.holds != sqlock::fuzz::holds(q, i)) std::abort();
    if (t.holds) continue;
    if (me.kind == lock_kind::exclusive) {
      if (t.watch != q[i - 1].znode) std::abort();
      continue;
    }
    if (t.watch.empty()) {
      if (me.kind != lock_kind::permit || !sqlock::fuzz::only_own_kind_before(q, i)) std::abort();
      continue;
    }
    bool earlier = false;
    for (std::size_t j = 0; j < i; ++j)
      earlier = earlier || (q[j].znode == t.watch && q[j].kind != me.kind);
    if (!earlier) std::abort();
  }
}

void check_round_trip(std::string_view owner, std::string_view text) {
  lock_request req;
  req.owner = std::string(owner);
  const auto b = [&](std::size_t k) {
    return k < text.size() ? static_cast<std::uint8_t>(text[k]) : std::uint8_t{0};
  };
  req.kind = b(0) % 3 == 0   ? lock_kind::exclusive
             : b(0) % 3 == 1 ? lock_kind::shared
                             : lock_kind::permit;
  if (req.kind == lock_kind::permit) {
    for (std::size_t k = 1; k <= 4; ++k) req.permits = req.permits << 8 | b(k);
    req.permits = std::max<std::uint32_t>(req.permits, 1);
  }
  std::int64_t seq = 0;
  for (char c : text) seq = (seq * 31 + static_cast<std::uint8_t>(c)) % 10000000000;
  std::string digits = std::to_string(seq);
  auto n = parse_node(node_prefix(req) + std::string(10 - digits.size(), '0') + digits);
  if (!n || n->owner != req.owner || n->kind != req.kind || n->permits != req.permits ||
      n->seq != seq)
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> children;
  for (std::size_t at = 0; at <= text.size();) {
    auto nl = std::min(text.find('\n', at), text.size());
    children.emplace_back(text.substr(at, nl - at));
    at = nl + 1;
  }
  const auto q = sorted_queue(children);
  std::size_t parsed = 0;
  for (const auto& c : children) parsed += parse_node(c) ? 1 : 0;
  if (q.size() != parsed) std::abort();
  for (std::size_t i = 0; i < q.size(); ++i) {
    auto n = parse_node(q[i].znode);
    if (!n || n->owner != q[i].owner || n->seq != q[i].seq || n->kind != q[i].kind ||
        n->permits != q[i].permits)
      std::abort();
    if (std::find(children.begin(), children.end(), q[i].znode) == children.end()) std::abort();
    if (i > 0 && q[i - 1].seq > q[i].seq) std::abort();
  }
  check_turns(q);
  check_round_trip(children.front(), text);
  return 0;
}
