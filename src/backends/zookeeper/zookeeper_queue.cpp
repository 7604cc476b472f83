// The lock queue on ZooKeeper (see zookeeper_queue.hpp).
#include "zookeeper_queue.hpp"

#include <algorithm>

#include "sqlock/zookeeper/zookeeper.hpp"

namespace sqlock::zookeeper::detail {
// ---- the book ----

void node_book::remember(const node_record& rec) {
  std::lock_guard g(m_);
  records_[rec.owner] = rec;
}

void node_book::forget(const std::string& owner) {
  std::lock_guard g(m_);
  records_.erase(owner);
}

std::optional<node_record> node_book::of(const std::string& owner, std::uint64_t epoch) {
  std::lock_guard g(m_);
  auto it = records_.find(owner);
  if (it == records_.end()) return std::nullopt;
  if (it->second.epoch != epoch) {
    records_.erase(it);
    return std::nullopt;
  }
  return it->second;
}

std::optional<node_record> node_book::find(const std::string& owner) {
  std::lock_guard g(m_);
  auto it = records_.find(owner);
  if (it == records_.end()) return std::nullopt;
  return it->second;
}

std::vector<node_record> node_book::take_epoch(std::uint64_t epoch) {
  std::lock_guard g(m_);
  std::vector<node_record> out;
  for (auto it = records_.begin(); it != records_.end();) {
    if (it->second.epoch == epoch) {
      out.push_back(std::move(it->second));
      it = records_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

// ---- the queue ----

std::string lock_queue::parent_of(std::string_view name) const {
  return lay_.parent_of(name);
}

std::vector<std::string> lock_queue::children(const std::string& path, steady_time until) {
  std::vector<std::string> out;
  int rc = call(s_, until, [&] { return get_children(s_, path, until, out); });
  if (rc == ZNONODE) return {};
  if (rc != ZOK) fail(rc, "get_children(" + path + ")");
  return out;
}

std::vector<queue_node> lock_queue::list(const std::string& parent, steady_time until) {
  return lay_.sorted(children(parent, until));
}

void lock_queue::ensure_path(const std::string& path, steady_time until) {
  std::size_t i = 1;
  while (i <= path.size()) {
    auto j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    const std::string part = path.substr(0, j);
    // exists() first: creating an existing node we may not write to fails with ZNOAUTH.
    int rc = call(s_, until, [&] { return exists(s_, part, until); });
    if (rc == ZNONODE) {
      std::string created;
      Stat st{};
      rc = call(s_, until, [&] {
        return detail::create(s_, part, {}, acl_, ZOO_PERSISTENT, until, created, st);
      });
    }
    if (rc != ZOK && rc != ZNODEEXISTS) fail(rc, "create(" + part + ")");
    i = j + 1;
  }
}

node_record lock_queue::create(const lock_request& req, steady_time until,
                               std::optional<std::vector<queue_node>>* listing) {
  node_record rec;
  rec.name = req.name;
  rec.owner = req.owner;
  rec.parent = parent_of(req.name);
  rec.epoch = s_.epoch;
  const std::string prefix = lay_.node_prefix(req);
  const std::string path = rec.parent + "/" + prefix;
  settle(rec.parent, until);
  auto adopt = [&](const std::string& created, const Stat& st) {
    rec.path = created;
    rec.znode = created.substr(rec.parent.size() + 1);
    rec.czxid = st.czxid;
    stats_.nodes_created++;
    book_.remember(rec);
    return rec;
  };
  bool make_parent = false;  // the parent was missing: made in the create's round trip
  for (int attempt = 0; attempt < 20; ++attempt) {
    Stat st{};
    std::string created;
    int rc = ZOK;
    if (listing && (attempt == 0 || make_parent)) {
      std::vector<std::string> kids;
      bool listed = false;
      rc = create_and_list(s_, path, req.holder, acl_, until, created, st, prefix, kids, listed,
                           make_parent ? lay_.parent_flags() : -1);
      if (rc == ZOK && listed) *listing = lay_.sorted(kids);
    } else {
      rc = detail::create(s_, path, req.holder, acl_, ZOO_EPHEMERAL_SEQUENTIAL, until, created, st,
                          prefix);
    }
    if (rc == ZOK) return adopt(created, st);
    if (rc == ZNONODE && listing && !make_parent) {
      // No parent (never made, or removed as an empty container): the next try makes it, the
      // node and the listing in one round trip.
      make_parent = true;
      continue;
    }
    make_parent = false;
    if (rc == ZNONODE) {  // no grandparent either
      std::string made;
      Stat pst{};
      int prc = call(s_, until, [&] {
        return detail::create(s_, rec.parent, {}, acl_, lay_.parent_flags(), until, made, pst);
      });
      if (prc == ZNONODE)
        ensure_path(rec.parent.substr(0, rec.parent.rfind('/')), until);
      else if (prc != ZOK && prc != ZNODEEXISTS)
        fail(prc, "create(" + rec.parent + ")");
      continue;
    }
    // At the deadline the create is given up; its node, if made, is deleted when it answers.
    if (rc == deadline_passed || !is_connection_loss(rc)) fail(rc, "create(" + path + ")");
    stats_.connection_losses++;
    if (!s_.wait_connected(until)) fail(s_.gone() ? ZSESSIONEXPIRED : rc, "create(" + path + ")");
    // Did the create happen before the reply was lost? The owner token is in the node's name.
    for (auto& n : list(rec.parent, until)) {
      if (n.owner != req.owner) continue;
      const std::string found = rec.parent + "/" + n.znode;
      if (call(s_, until, [&] { return exists(s_, found, until, &st); }) != ZOK) break;
      stats_.lost_replies_found++;
      return adopt(found, st);
    }
  }
  throw connection_error("ZooKeeper: could not create a node under " + rec.parent);
}

bool lock_queue::remove(const node_record& rec, steady_time until) {
  book_.forget(rec.owner);
  int rc = call(s_, until, [&] { return detail::remove(s_, rec.path, until); });
  if (rc == ZOK) return true;
  if (rc == ZNONODE) return false;
  // The outcome is unknown: the delete goes on in the background until the server answers
  // (or the session ends, which deletes the node too).
  if (is_connection_loss(rc)) remove_later(s_, rec.path);
  fail(rc, "delete(" + rec.path + ")");
}

void lock_queue::remove_then(const node_record& rec, std::function<void()> done) noexcept {
  book_.forget(rec.owner);
  detail::remove_then(s_, rec.path, std::move(done));
}

bool lock_queue::remove_async(const node_record& rec) {
  if (releases_.send(s_, rec.parent, rec.path) != ZOK) return false;
  book_.forget(rec.owner);
  return true;
}

void lock_queue::settle(const std::string& parent, steady_time until) {
  releases_.settle(parent, s_.epoch, until);
}

void lock_queue::keep_one_node(node_record& rec, std::vector<queue_node>& q, steady_time until) {
  auto first = std::find_if(q.begin(), q.end(), [&](auto& n) { return n.owner == rec.owner; });
  if (first == q.end()) return;
  if (first->znode != rec.znode) {
    // An earlier create of this owner whose reply was lost made it: it is ours and ahead.
    const std::string path = rec.parent + "/" + first->znode;
    Stat st{};
    if (call(s_, until, [&] { return exists(s_, path, until, &st); }) != ZOK) return;
    remove_later(s_, rec.path);
    rec.znode = first->znode;
    rec.path = path;
    rec.czxid = st.czxid;
    book_.remember(rec);
    stats_.lost_replies_found++;
  }
  for (const auto& n : q)
    if (n.owner == rec.owner && n.znode != rec.znode) remove_later(s_, rec.parent + "/" + n.znode);
  std::erase_if(q, [&](auto& n) { return n.owner == rec.owner && n.znode != rec.znode; });
}

lease_info lock_queue::lease_of(const node_record& rec) {
  lease_info l;
  l.name = rec.name;
  l.owner = rec.owner;
  l.fence = static_cast<std::uint64_t>(rec.czxid);
  l.state = std::make_shared<node_record>(rec);
  return l;
}

}  // namespace sqlock::zookeeper::detail
