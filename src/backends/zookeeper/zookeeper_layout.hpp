// How lock names and requests map onto znodes: sqlock's own layout (<root>/locks/<escaped
// name>, children "n-"/"r-"/"p<N>-", zookeeper_kinds.hpp) or a peer's, chosen by the URL option
// compat= (kazoo: zookeeper_kazoo.cpp; curator, curator-rw: zookeeper_curator.cpp). A layout names
// the parent of a lock and the child its requests create, reads a lock's children as a queue in the
// peer's order, and says who holds and what a waiter watches by the peer's own rules, so a
// sqlock waiter queues behind the peer's nodes and the peer's waiters behind sqlock's. Internal.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sqlock/backend.hpp"
#include "zookeeper_kinds.hpp"

namespace sqlock::zookeeper::detail {

/// One on-server layout of ZooKeeper locks.
class layout {
 public:
  virtual ~layout() = default;
  /// The compat= value ("" for sqlock's own layout).
  virtual std::string name() const = 0;
  /// Throws config_error for a lock name the layout cannot store (checked before anything is
  /// sent).
  virtual void check_name(std::string_view lock_name) const = 0;
  /// The znode whose children are the queue of lock `lock_name`.
  virtual std::string parent_of(std::string_view lock_name) const = 0;
  /// The znode under which the parents live (made when a session starts).
  virtual std::string base() const = 0;
  /// The lock name a child of base() stands for; nullopt for another child.
  virtual std::optional<std::string> lock_of(std::string_view child) const = 0;
  /// ZOO_CONTAINER (removed by the server once empty) or ZOO_PERSISTENT: how a missing parent is
  /// made, as the peer makes it.
  virtual int parent_flags() const = 0;
  /// The child-name prefix of the nodes `req`'s owner makes (the server appends the sequence);
  /// it names the owner, so a create whose reply was lost is found again by it.
  virtual std::string node_prefix(const lock_request& req) const = 0;
  /// The queue of a lock from its children, in the order the layout's rules read it.
  virtual std::vector<queue_node> sorted(const std::vector<std::string>& children) const = 0;
  /// Where node `i` of queue `q` (from sorted()) stands.
  virtual turn turn_of(const std::vector<queue_node>& q, std::size_t i) const = 0;
  /// Whether the layout has shared locks / permits.
  virtual bool shared() const = 0;
  virtual bool permits() const = 0;  ///< see shared()
  /// Whether sorted() puts a node created later after every node that exists now (true when
  /// it orders by the parent's sequence alone): a waiter whose watched node was the queue's
  /// first may then decide from what it saw without listing the queue again.
  virtual bool creation_order() const { return true; }
};

/// The layout for URL option compat=`compat` ("" = sqlock's own under `root`/locks; "kazoo",
/// "curator", "curator-rw": the lock named N is the znode `root`/N). config_error for another
/// value, naming the valid ones.
std::unique_ptr<layout> make_layout(const std::string& compat, const std::string& root);

/// The valid compat= values of ZooKeeper.
const std::vector<std::string>& compat_values();

/// sqlock's own layout (zookeeper_kinds.cpp).
std::unique_ptr<layout> native_layout(const std::string& locks_root);
/// kazoo's Lock, ReadLock and WriteLock (zookeeper_kazoo.cpp).
std::unique_ptr<layout> kazoo_layout(const std::string& root);
/// Curator's InterProcessMutex (`rw` false) or InterProcessReadWriteLock (zookeeper_curator.cpp).
std::unique_ptr<layout> curator_layout(const std::string& root, bool rw);

/// What the peers' layouts share (zookeeper_layout.cpp): the lock named N is the znode <root>/N, N
/// a relative znode path, given to the peer verbatim.
class peer_layout : public layout {
 public:
  explicit peer_layout(std::string root) : root_(std::move(root)) {}
  void check_name(std::string_view lock_name) const override;
  std::string parent_of(std::string_view lock_name) const override;
  std::string base() const override { return root_; }
  std::optional<std::string> lock_of(std::string_view child) const override {
    return std::string(child);
  }

 protected:
  /// The ten-digit sequence at the end of `child` after `tag` ("-" allowed: a counter that
  /// overflowed), as kazoo's contender pattern and Curator's sort key read it; nullopt when
  /// `child` does not end so.
  static std::optional<std::int64_t> sequence_after(std::string_view child, std::string_view tag);

 private:
  std::string root_;
};

}  // namespace sqlock::zookeeper::detail
