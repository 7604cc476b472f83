// The lock queue on ZooKeeper: one EPHEMERAL_SEQUENTIAL child per acquisition under the lock's
// CONTAINER parent, named by the request's kind and owner (zookeeper_kinds.hpp says who holds and
// what a waiter watches: for an exclusive request, its immediate predecessor). Here: lock and owner
// names as znode names, the backend's book of the nodes it created (per owner token), creating a
// node idempotently (a create whose reply was lost is found again by the owner token in its name),
// deleting it, and waiting for the turn, blocked or armed (zookeeper_wait.cpp). Every request is
// bounded by the caller's time (zookeeper_connection.hpp). Internal.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sqlock/backend.hpp"
#include "zookeeper_connection.hpp"
#include "zookeeper_kinds.hpp"
#include "zookeeper_layout.hpp"
#include "zookeeper_names.hpp"
#include "zookeeper_release.hpp"

namespace sqlock::zookeeper::detail {

/// A node this backend object created and still considers its own.
struct node_record {
  std::string name;    ///< lock name
  std::string owner;   ///< owner token
  std::string parent;  ///< the lock's parent znode in the layout
  std::string path;    ///< parent + "/" + znode
  std::string znode;
  std::uint64_t epoch = 0;  ///< session that created it
  std::int64_t czxid = 0;   ///< creation zxid: the fence
};

/// The nodes this backend created, by owner token. Thread-safe.
class node_book {
 public:
  /// Records `rec` as the node of its owner.
  void remember(const node_record& rec);
  /// Forgets the node of `owner`.
  void forget(const std::string& owner);
  /// The node of `owner` made on session `epoch` (a node of an older session is forgotten).
  std::optional<node_record> of(const std::string& owner, std::uint64_t epoch);
  /// The node of `owner`, whatever its session.
  std::optional<node_record> find(const std::string& owner);
  /// Removes and returns every node of session `epoch` (it expired: they are gone).
  std::vector<node_record> take_epoch(std::uint64_t epoch);

 private:
  std::mutex m_;
  std::map<std::string, node_record> records_;
};

/// The queue requests of one backend on one session.
/// What one waiting request keeps between its looks and waits (lock_queue::look, await).
struct turn_state {
  std::optional<node_record> rec;                  ///< the owner's node on the current session
  std::optional<std::vector<queue_node>> listing;  ///< a listing the next look needs not read
  std::string watch;                  ///< what the last look waits for ("" = the whole queue)
  std::unique_ptr<waiter_slot> slot;  ///< the watch set, while it has not fired
  steady_time recheck_at{};           ///< when a watch that has not fired is read again anyway
  steady_time sent{};                 ///< when the request that may show the node first was sent
  bool fresh = false;                 ///< the node is new: its first look checks the permits
  bool waited = false;                ///< it has waited
  bool woken = false;                 ///< the last wait ended by its watch
  std::vector<queue_node> seen;       ///< the queue as the last look that did not hold saw it
  bool watched_gone = false;          ///< the node watched was seen deleted since that look
  steady_time gone_seen{};            ///< when the request or event that showed it was sent
};

class lock_queue {
 public:
  lock_queue(session& s, const ACL_vector* acl, counters& stats, node_book& book, const layout& lay,
             release_tracker& releases)
      : s_(s), acl_(acl), stats_(stats), book_(book), lay_(lay), releases_(releases) {}

  /// The parent node of lock `name`.
  std::string parent_of(std::string_view name) const;
  /// The lock's queue in the layout's order (empty when the parent does not exist).
  std::vector<queue_node> list(const std::string& parent, steady_time until);
  /// Children of `path` (empty when it does not exist).
  std::vector<std::string> children(const std::string& path, steady_time until);
  /// Creates the owner's node, idempotently. With `listing`, the create is pipelined with a
  /// listing of the queue (left empty when that did not work out).
  node_record create(const lock_request& req, steady_time until,
                     std::optional<std::vector<queue_node>>* listing = nullptr);
  /// Deletes a node; true when this call deleted it. Forgets it in the book.
  bool remove(const node_record& rec, steady_time until);
  /// Sends the delete of a node without waiting for the answer (release=async); true when
  /// sent. Forgets it in the book then.
  bool remove_async(const node_record& rec);
  /// Deletes a node in the background and calls `done` once the delete was answered or given
  /// up (a cancelled waiter's node: asynchronous cancel_then()). Forgets it in the book.
  void remove_then(const node_record& rec, std::function<void()> done) noexcept;
  /// Waits (until `until` at most) while a release of this backend under `parent` is being
  /// sent again after a connection loss, so that an acquire never queues behind its own
  /// earlier release (zookeeper_release.hpp).
  void settle(const std::string& parent, steady_time until);
  /// Persistent nodes for every component of `path`.
  void ensure_path(const std::string& path, steady_time until);

  /// One look of a waiting request `st` for `req`: creates the owner's node when it has none
  /// on this session, lists the queue and returns the lease when the node holds (`sent` =
  /// when the request that showed it first was sent); nullopt otherwise (st.watch then names
  /// what it waits for), or at once while the watch await() set has not fired. The node stays
  /// in the book; the caller removes it when it gives up. Each read is bounded by `deadline`
  /// and `io_timeout`. Throws session_gone when the node died with the session,
  /// connection_error when the store does not answer in time.
  std::optional<lease_info> look(turn_state& st, const lock_request& req, steady_time deadline,
                                 milliseconds io_timeout);
  /// Sets a watch on what the last look() waits for (the predecessor, or the whole queue behind
  /// permits) unless one is set (one exchange, bounded by `until`, at least a short while, and
  /// `io_timeout`): true when it is set (st.slot), false when the next look is due at once
  /// (the queue changed meanwhile, or there is nothing to watch). Throws connection_error
  /// when the watch cannot be set.
  bool watch(turn_state& st, steady_time until, milliseconds io_timeout);
  /// watch(), then waits until it fires, `until` or a stop. Returns at once when the queue
  /// changed meanwhile.
  void await(turn_state& st, steady_time until, const std::stop_token& stop,
             milliseconds io_timeout);
  /// For a request driven asynchronously (st.slot armed instead of waited on): before its next
  /// look, takes in what the watch saw, as await() does after its wait; nothing while the
  /// watch has not fired and the session's state did not change.
  void after_wake(turn_state& st);

  /// The lease of a node record (fence = czxid).
  static lease_info lease_of(const node_record& rec);

 private:
  // Whether node `mine` holds once node `gone` left queue `q` (as a look saw it), decided
  // without listing the queue again (zookeeper_wait.cpp).
  bool holds_without(const std::vector<queue_node>& q, const std::string& gone,
                     const node_record& mine) const;
  // One node per owner in queue `q`: the owner's first node becomes `rec` (an earlier create
  // whose reply was lost made it), the others are deleted in the background and left out of `q`.
  void keep_one_node(node_record& rec, std::vector<queue_node>& q, steady_time until);

  session& s_;
  const ACL_vector* acl_;
  counters& stats_;
  node_book& book_;
  const layout& lay_;
  release_tracker& releases_;
};

}  // namespace sqlock::zookeeper::detail
