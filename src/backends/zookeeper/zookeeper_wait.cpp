// Waiting for the turn in a ZooKeeper lock queue (lock_queue::look and await,
// zookeeper_queue.hpp): the owner's node is created (or found again) and, while it does not
// hold, its waiter watches the one node the queue rule names (or, a permit behind N permits,
// the whole queue) and looks again when that watch fires. When the node watched was the
// queue's first, its deletion decides the turn without listing the queue again. A request
// driven asynchronously sets the same watch in its attempt and arms it (waiter_slot::arm): the
// watch event calls the request's wake-up, and no thread waits.
#include <algorithm>

#include "zookeeper_queue.hpp"

namespace sqlock::zookeeper::detail {
namespace {
// How long a watch that has not fired is trusted before the queue is read again.
constexpr milliseconds watch_recheck{30000};
// The least time setting a watch may take, even when the wait it is for ends sooner.
constexpr milliseconds set_watch_min{250};
}  // namespace

bool lock_queue::holds_without(const std::vector<queue_node>& q, const std::string& gone,
                               const node_record& mine) const {
  // Only when `gone` was the first node of `q` and the layout keeps creation order: no node can
  // be ahead of it any more (one made later sorts after ours), and the others of `q`, left in,
  // can only have left too, which never takes a turn away.
  if (gone.empty() || q.empty() || q.front().znode != gone || !lay_.creation_order()) return false;
  const std::vector<queue_node> rest(q.begin() + 1, q.end());
  auto me = std::find_if(rest.begin(), rest.end(), [&](auto& n) { return n.znode == mine.znode; });
  return me != rest.end() && lay_.turn_of(rest, static_cast<std::size_t>(me - rest.begin())).holds;
}

std::optional<lease_info> lock_queue::look(turn_state& st, const lock_request& req,
                                           steady_time deadline, milliseconds io_timeout) {
  auto io = [&] { return exchange_bound(deadline, io_timeout); };
  if (st.slot) {
    // The watch has not fired: nothing it waits for moved. Read again only when the bounded
    // re-check is due (ZooKeeper re-registers watches after a reconnect itself).
    if (clock::now() < st.recheck_at) return std::nullopt;
    st.slot.reset();
  }
  if (st.rec && st.rec->epoch != s_.epoch) st.rec.reset();  // died with its session
  if (st.watched_gone && st.rec && !s_.gone() && holds_without(st.seen, st.watch, *st.rec)) {
    // The node watched was the queue's first and is gone: ours holds, no listing needed. The
    // hold is measured from the request or event that showed it.
    auto l = lease_of(*st.rec);
    l.waited = st.waited;
    l.sent = st.gone_seen;
    st.watched_gone = false;
    return l;
  }
  st.watched_gone = false;
  if (!st.rec) {
    st.listing.reset();
    st.rec = book_.of(req.owner, s_.epoch);  // a retried create's node
  }
  if (!st.rec) {
    // A create is bounded by the deadline only: given up, its node is deleted when it answers.
    st.sent = clock::now();
    st.fresh = true;
    st.rec = create(req, deadline, &st.listing);
  }
  for (;;) {
    if (!st.listing) st.sent = clock::now();
    auto q = st.listing ? std::move(*st.listing) : list(st.rec->parent, io());
    st.listing.reset();
    keep_one_node(*st.rec, q, io());
    auto me = std::find_if(q.begin(), q.end(), [&](auto& n) { return n.znode == st.rec->znode; });
    if (me == q.end()) {
      // Our node vanished (force_release of a waiter, or the session died): queue again.
      book_.forget(req.owner);
      st.rec.reset();
      if (s_.gone()) throw session_gone("ZooKeeper session expired while waiting");
      if (clock::now() >= deadline || req.stop.stop_requested()) return std::nullopt;
      st.sent = clock::now();
      st.fresh = true;
      st.rec = create(req, deadline, &st.listing);
      continue;
    }
    if (st.fresh) check_permits(q, static_cast<std::size_t>(me - q.begin()), req);
    st.fresh = false;
    auto t = lay_.turn_of(q, static_cast<std::size_t>(me - q.begin()));
    if (t.holds) {
      auto l = lease_of(*st.rec);
      l.waited = st.waited;
      l.sent = st.sent;
      return l;
    }
    if (st.woken) stats_.woken_not_first++;
    st.woken = false;
    st.watch = t.watch;
    st.seen = std::move(q);
    return std::nullopt;
  }
}

bool lock_queue::watch(turn_state& st, steady_time until, milliseconds io_timeout) {
  if (!st.rec || st.listing) return false;  // nothing to wait for, or the next look is due now
  if (!st.slot) {
    st.waited = true;
    auto slot = std::make_unique<waiter_slot>(s_);
    // Setting the watch is one exchange: bounded by the I/O timeout, at least a short while.
    const auto io = exchange_bound(std::max(until, clock::now() + set_watch_min), io_timeout);
    if (st.watch.empty()) {
      // Behind N permits: any of them may leave first, so the whole queue is watched.
      std::vector<std::string> kids;
      st.sent = clock::now();
      int rc =
          call(s_, io, [&] { return get_children(s_, st.rec->parent, io, kids, slot->context()); });
      if (rc != ZOK && rc != ZNONODE) fail(rc, "get_children(" + st.rec->parent + ")");
      auto now = lay_.sorted(kids);
      auto again =
          std::find_if(now.begin(), now.end(), [&](auto& n) { return n.znode == st.rec->znode; });
      if (again == now.end() ||
          lay_.turn_of(now, static_cast<std::size_t>(again - now.begin())).holds) {
        st.listing = std::move(now);  // changed meanwhile: look again at once
        return false;
      }
    } else {
      const std::string pred = st.rec->parent + "/" + st.watch;
      const auto watch_sent = clock::now();
      int rc = call(s_, io, [&] { return exists(s_, pred, io, nullptr, slot->context()); });
      if (rc == ZNONODE) {  // the predecessor left already: look again
        st.watched_gone = true;
        st.gone_seen = watch_sent;  // the request that showed it
        return false;
      }
      if (rc != ZOK) fail(rc, "exists(" + pred + ")");
    }
    st.slot = std::move(slot);
    // The re-check only bounds how long a lost watch could delay us: long, so a long queue
    // does not poll.
    st.recheck_at = clock::now() + watch_recheck;
  }
  return true;
}

void lock_queue::await(turn_state& st, steady_time until, const std::stop_token& stop,
                       milliseconds io_timeout) {
  if (!watch(st, until, io_timeout)) return;
  stats_.waiting++;
  bool fired = st.slot->wait(std::min(until, st.recheck_at), stop);
  stats_.waiting--;
  // Fired, or woken early by a change of the session's state: the next attempt looks again.
  // Ended by `until` (or a stop): the watch stays set.
  if (fired && st.slot->deleted()) {
    st.watched_gone = true;
    st.gone_seen = clock::now();  // the deletion came before the event
  }
  if (fired || (clock::now() < std::min(until, st.recheck_at) && !stop.stop_requested()))
    st.slot.reset();
  st.woken = fired;
}

void lock_queue::after_wake(turn_state& st) {
  if (!st.slot || !st.slot->settled()) return;  // nothing moved: the look needs no read
  const bool fired = st.slot->fired();
  if (fired && st.slot->deleted()) {
    st.watched_gone = true;
    st.gone_seen = clock::now();  // the deletion came before the event
  }
  st.slot.reset();  // fired, or the session's state changed: the look reads the queue again
  st.woken = fired;
}

}  // namespace sqlock::zookeeper::detail
