// The rule of a lock queue, shared by the queue-based backends (etcd's keys, etcd_queue.cpp;
// ZooKeeper's children, zookeeper_queue.cpp): from a name's entries in arrival order, whether an
// entry holds and which entry it waits for.
//   exclusive  holds when first; else waits for the entry just before it
//   shared     holds when only shared entries precede it (a queued writer keeps later readers
//              out); else waits for the nearest entry before it of another kind
//   permit N   holds when fewer than N entries precede it, all permits; else waits for the
//              nearest entry before it of another kind, or, behind N permits only, for any of
//              the entries before it (any of them may leave first)
// An entry is anything with `kind` (lock_kind) and `permits` (the N a permit was made with).
// Header-only and free of any store's types, so both backends include it without depending on
// each other or on a symbol of the core library. Internal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sqlock/backend.hpp"
#include "sqlock/errors.hpp"

namespace sqlock::queue_rule {

/// Where one entry of a queue stands.
struct standing {
  bool holds = false;  ///< it holds now
  /// When it does not hold and any_before is false: the index of the one entry whose leaving
  /// may let it hold.
  std::size_t wait_for = 0;
  /// When it does not hold: a permit behind N permits, which any entry before it may free.
  bool any_before = false;
};

/// Where entry `i` of queue `q` (arrival order; `q[i]` must exist) stands.
template <class Queue>
standing standing_of(const Queue& q, std::size_t i) {
  const auto& me = q[i];
  if (i == 0) return {true, 0, false};
  if (me.kind == lock_kind::exclusive) return {false, i - 1, false};
  for (std::size_t j = i; j-- > 0;)
    if (q[j].kind != me.kind) return {false, j, false};  // the nearest of another kind
  if (me.kind == lock_kind::shared || i < me.permits) return {true, 0, false};
  return {false, 0, true};
}

/// Whether entry `i` of `q` holds now.
template <class Queue>
bool holds(const Queue& q, std::size_t i) {
  return standing_of(q, i).holds;
}

/// Throws config_error when a permit entry before entry `i` of `q` was made with another N than
/// `permits`, the N of a permit request for lock `name` on `store` ("etcd", "ZooKeeper"): the
/// first request of an idle name sets N, and a request for another N while permits of the name
/// are held or awaited is refused. Nothing for a request of another kind.
template <class Queue>
void check_permit_count(const Queue& q, std::size_t i, lock_kind kind, std::uint32_t permits,
                        std::string_view name, std::string_view store) {
  if (kind != lock_kind::permit) return;
  for (std::size_t j = 0; j < i; ++j)
    if (q[j].kind == lock_kind::permit && q[j].permits != permits)
      throw config_error("semaphore '" + std::string(name) + "' has " +
                         std::to_string(q[j].permits) + " permits on " + std::string(store) +
                         "; a request for " + std::to_string(permits) +
                         " permits does not agree (all users of a name must give the same N)");
}

}  // namespace sqlock::queue_rule
