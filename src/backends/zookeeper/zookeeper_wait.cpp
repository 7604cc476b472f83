// Waiting for the turn in a ZooKeeper lock queue (lock_queue::wait_turn, zookeeper_queue.hpp):
// the owner's node is created (or found again), and while it does not hold, its waiter watches
// the one node the queue rule names (or, a permit behind N permits, the whole queue) and looks
// again when that watch fires.
#include <algorithm>

#include "zookeeper_queue.hpp"

namespace sqlock::zookeeper::detail {

std::optional<lease_info> lock_queue::wait_turn(const lock_request& req, steady_time deadline,
                                                const wait_policy& policy,
                                                milliseconds io_timeout) {
  // One exchange: by the deadline (at least min_attempt from now) and the I/O timeout.
  auto io = [&] {
    return exchange_bound(std::max(deadline, clock::now() + policy.min_attempt), io_timeout);
  };
  auto sent = clock::now();
  std::optional<node_record> rec = book_.of(req.owner, s_.epoch);
  std::optional<std::vector<queue_node>> listing;
  // A create is bounded by the deadline only: given up, its node is deleted when it answers.
  auto create_until = [&] { return std::max(deadline, clock::now() + policy.min_attempt); };
  bool fresh = !rec;  // the node is new: its first look checks the permit count
  if (!rec) rec = create(req, create_until(), &listing);
  bool waited = false, woken = false;
  auto holding = [&] {
    auto l = lease_of(*rec);
    l.waited = waited;
    l.sent = sent;
    return l;
  };
  // Whether our node holds once node `gone` left queue `q` as last seen, decided without
  // listing it again. Only when `gone` was the first node of `q` and the layout keeps creation
  // order: no node can be ahead of it any more (one made later sorts after ours), and the
  // others of `q`, left in, can only have left too, which never takes a turn away.
  auto holds_without = [&](const std::vector<queue_node>& q, const std::string& gone) {
    if (gone.empty() || q.empty() || q.front().znode != gone || !lay_.creation_order())
      return false;
    const std::vector<queue_node> rest(q.begin() + 1, q.end());
    auto me =
        std::find_if(rest.begin(), rest.end(), [&](auto& n) { return n.znode == rec->znode; });
    return me != rest.end() &&
           lay_.turn_of(rest, static_cast<std::size_t>(me - rest.begin())).holds;
  };
  for (;;) {
    if (!listing) sent = clock::now();
    auto q = listing ? std::move(*listing) : list(rec->parent, io());
    listing.reset();
    keep_one_node(*rec, q, io());
    auto me = std::find_if(q.begin(), q.end(), [&](auto& n) { return n.znode == rec->znode; });
    if (me == q.end()) {
      // Our node vanished (force_release of a waiter, or the session died): queue again.
      book_.forget(req.owner);
      if (s_.gone()) throw session_gone("ZooKeeper session expired while waiting");
      if (clock::now() >= deadline || req.stop.stop_requested()) return std::nullopt;
      sent = clock::now();
      fresh = true;
      rec = create(req, create_until(), &listing);
      continue;
    }
    if (fresh) check_permits(q, static_cast<std::size_t>(me - q.begin()), req);
    fresh = false;
    auto t = lay_.turn_of(q, static_cast<std::size_t>(me - q.begin()));
    if (t.holds) return holding();
    if (woken) stats_.woken_not_first++;
    woken = false;
    if (clock::now() >= deadline || req.stop.stop_requested()) return std::nullopt;
    waited = true;
    waiter_slot slot(s_);
    auto until = io();
    if (t.watch.empty()) {
      // Behind N permits: any of them may leave first, so the whole queue is watched.
      std::vector<std::string> kids;
      sent = clock::now();
      int rc = call(s_, until,
                    [&] { return get_children(s_, rec->parent, until, kids, slot.context()); });
      if (rc != ZOK && rc != ZNONODE) fail(rc, "get_children(" + rec->parent + ")");
      auto now = lay_.sorted(kids);
      auto again =
          std::find_if(now.begin(), now.end(), [&](auto& n) { return n.znode == rec->znode; });
      if (again == now.end() ||
          lay_.turn_of(now, static_cast<std::size_t>(again - now.begin())).holds) {
        listing = std::move(now);  // changed meanwhile: look again at once
        continue;
      }
    } else {
      const std::string pred = rec->parent + "/" + t.watch;
      const auto watch_sent = clock::now();
      int rc = call(s_, until, [&] { return exists(s_, pred, until, nullptr, slot.context()); });
      if (rc == ZNONODE) {                         // the predecessor left already
        if (!holds_without(q, t.watch)) continue;  // look again
        sent = watch_sent;                         // the request that showed it
        return holding();
      }
      if (rc != ZOK) fail(rc, "exists(" + pred + ")");
    }
    stats_.waiting++;
    // The re-check only bounds how long a lost watch could delay us (ZooKeeper re-registers
    // watches after a reconnect itself): at least 30 s, so a long queue does not poll.
    auto recheck = std::max(policy.notify_recheck, milliseconds(30000));
    bool fired = slot.wait(std::min(deadline, clock::now() + recheck), req.stop);
    stats_.waiting--;
    // Stopped, or nothing moved by the deadline: the caller removes the node.
    if (req.stop.stop_requested() || (!fired && clock::now() >= deadline)) return std::nullopt;
    woken = fired;
    // The node watched was deleted: when it was the queue's first, whether ours holds follows
    // from the queue seen (a woken waiter that does not hold looks again, as before).
    // The hold is measured from the event (the deletion came before it), as from the listing
    // that would otherwise have shown it.
    if (fired && slot.deleted() && !s_.gone() && holds_without(q, t.watch)) {
      sent = clock::now();
      return holding();
    }
  }
}

}  // namespace sqlock::zookeeper::detail
