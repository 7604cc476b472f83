// The kinds of request in one ZooKeeper lock queue and who among them holds. Every request of
// a name is an EPHEMERAL_SEQUENTIAL child of the name's parent, and the parent's one sequence
// counter orders them all (a later node has a higher sequence and a higher czxid):
//   n-<owner>-<seq>     exclusive
//   r-<owner>-<seq>     shared
//   p<N>-<owner>-<seq>  one of N permits
// Who holds and which node a waiter watches follow the queue rule of core/queue_rule.hpp; a
// permit behind N permits watches the whole queue.
// Old clients know only "n-" nodes: their exclusive nodes still exclude the other kinds here.
// Internal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sqlock/backend.hpp"

namespace sqlock::zookeeper::detail {

/// One queue entry.
struct queue_node {
  std::string znode;  ///< child name
  std::string owner;  ///< owner token
  std::int64_t seq = 0;
  lock_kind kind = lock_kind::exclusive;
  std::uint32_t permits = 0;  ///< kind permit: the N the node was made with
  bool other = false;  ///< a child of no kind the layout names, which a peer's rule still counts
                       ///< as a contender (Curator counts every child of the lock's znode)
};

/// The entry a child name stands for; nullopt for a child that is no queue node.
std::optional<queue_node> parse_node(std::string_view child);
/// The queue nodes among `children`, lowest sequence first.
std::vector<queue_node> sorted_queue(const std::vector<std::string>& children);
/// The child-name prefix of the nodes `req`'s owner makes: "n-", "r-" or "p<N>-", the escaped
/// owner token and "-".
std::string node_prefix(const lock_request& req);

/// Where node `i` of queue `q` stands.
struct turn {
  bool holds = false;  ///< it holds now
  std::string watch;   ///< else the child whose deletion it waits for; "" = any change of the
                       ///< queue (a permit behind N permits: any of them may leave first)
};
/// The turn of node `i` of `q` (a sorted queue).
turn turn_of(const std::vector<queue_node>& q, std::size_t i);

/// Throws config_error when a permit node before node `i` of `q` was made with another N than
/// `req` (queue_rule::check_permit_count). Nothing for other kinds.
void check_permits(const std::vector<queue_node>& q, std::size_t i, const lock_request& req);

}  // namespace sqlock::zookeeper::detail
