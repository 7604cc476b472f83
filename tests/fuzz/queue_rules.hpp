// Who holds in a lock queue of mixed kinds, restated independently of the rule both queue-based
// backends use (src/core/queue_rule.hpp): fuzz_queue_rule checks that rule against this, and the
// targets of both backends (ZooKeeper's children, zookeeper_kinds.hpp; etcd's keys, etcd_kinds.hpp)
// their turn_of(). `Node` has `kind` and `permits`.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "sqlock/backend.hpp"

namespace sqlock::fuzz {

/// True when every node before `i` is of node `i`'s kind.
template <class Node>
bool only_own_kind_before(const std::vector<Node>& q, std::size_t i) {
  return std::all_of(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(i),
                     [&](const Node& n) { return n.kind == q[i].kind; });
}

/// Whether node `i` holds: an exclusive one when first; a shared one behind shared ones only;
/// a permit behind fewer than its N permits only.
template <class Node>
bool holds(const std::vector<Node>& q, std::size_t i) {
  const auto& me = q[i];
  if (me.kind == lock_kind::exclusive) return i == 0;
  return only_own_kind_before(q, i) && (me.kind == lock_kind::shared || i < me.permits);
}

}  // namespace sqlock::fuzz
