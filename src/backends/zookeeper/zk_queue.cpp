// The lock queue on ZooKeeper (see zk_queue.hpp).
#include "zk_queue.hpp"

#include <algorithm>

#include "sqlock/url.hpp"
#include "sqlock/zookeeper/zookeeper.hpp"

namespace sqlock::zookeeper::detail {

namespace {

bool plain_char(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == ':' || c == '@' || c == '+' || c == '=' || c == ',' || c == '~' ||
         c == '-';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Length of the well-formed UTF-8 sequence at s[i] (no overlong forms, surrogates or code
// points above U+10FFFF), 0 when there is none.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  unsigned char c = b(0);
  if (c < 0x80) return 1;
  std::size_t n = c >= 0xC2 && c <= 0xDF   ? 2
                  : c >= 0xE0 && c <= 0xEF ? 3
                  : c >= 0xF0 && c <= 0xF4 ? 4
                                           : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((b(k) & 0xC0) != 0x80) return 0;
  if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
  if (c == 0xED && b(1) >= 0xA0) return 0;  // UTF-16 surrogate
  if (c == 0xF0 && b(1) < 0x90) return 0;   // overlong
  if (c == 0xF4 && b(1) >= 0x90) return 0;  // above U+10FFFF
  return n;
}

}  // namespace

// ---- names ----

void check_name(std::string_view name) {
  if (name.empty()) throw config_error("lock name must not be empty");
  if (name.size() > max_name_bytes)
    throw config_error("lock name of " + std::to_string(name.size()) +
                       " bytes is too long for ZooKeeper (at most " +
                       std::to_string(max_name_bytes) + " bytes)");
  for (std::size_t i = 0; i < name.size();) {
    auto n = utf8_sequence(name, i);
    if (n == 0)
      throw config_error("lock name is not valid UTF-8 (invalid byte at offset " +
                         std::to_string(i) + ")");
    i += n;
  }
}

std::string escape(std::string_view s) {
  bool all_dots = !s.empty() && s.find_first_not_of('.') == std::string_view::npos;
  if (all_dots) return percent_encode(s, [](unsigned char) { return false; });
  return percent_encode(s, plain_char);
}

std::optional<std::string> unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '%') {
      if (i + 2 >= s.size()) return std::nullopt;
      int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (plain_char(c)) {
      out.push_back(static_cast<char>(c));
    } else {
      return std::nullopt;
    }
  }
  return out;
}

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
  return locks_ + "/" + escape(name);
}

std::vector<std::string> lock_queue::children(const std::string& path, steady_time until) {
  std::vector<std::string> out;
  int rc = call(s_, until, [&] { return get_children(s_, path, until, out); });
  if (rc == ZNONODE) return {};
  if (rc != ZOK) fail(rc, "get_children(" + path + ")");
  return out;
}

std::vector<queue_node> lock_queue::list(const std::string& parent, steady_time until) {
  return sorted_queue(children(parent, until));
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
  const std::string prefix = node_prefix(req);
  const std::string path = rec.parent + "/" + prefix;
  auto adopt = [&](const std::string& created, const Stat& st) {
    rec.path = created;
    rec.znode = created.substr(rec.parent.size() + 1);
    rec.czxid = st.czxid;
    stats_.nodes_created++;
    book_.remember(rec);
    return rec;
  };
  for (int attempt = 0; attempt < 20; ++attempt) {
    Stat st{};
    std::string created;
    int rc = ZOK;
    if (attempt == 0 && listing) {
      std::vector<std::string> kids;
      bool listed = false;
      rc = create_and_list(s_, path, req.holder, acl_, until, created, st, prefix, kids, listed);
      if (rc == ZOK && listed) *listing = sorted_queue(kids);
    } else {
      rc = detail::create(s_, path, req.holder, acl_, ZOO_EPHEMERAL_SEQUENTIAL, until, created, st,
                          prefix);
    }
    if (rc == ZOK) return adopt(created, st);
    if (rc == ZNONODE) {  // no parent (never made, or removed as an empty container)
      std::string made;
      Stat pst{};
      int prc = call(s_, until, [&] {
        return detail::create(s_, rec.parent, {}, acl_, ZOO_CONTAINER, until, made, pst);
      });
      if (prc == ZNONODE)
        ensure_path(locks_, until);
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
    if (fresh) check_permits(q, *me, req);
    fresh = false;
    auto t = turn_of(q, static_cast<std::size_t>(me - q.begin()));
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
      auto now = sorted_queue(kids);
      auto again =
          std::find_if(now.begin(), now.end(), [&](auto& n) { return n.znode == rec->znode; });
      if (again == now.end() || turn_of(now, static_cast<std::size_t>(again - now.begin())).holds) {
        listing = std::move(now);  // changed meanwhile: look again at once
        continue;
      }
    } else {
      const std::string pred = rec->parent + "/" + t.watch;
      int rc = call(s_, until, [&] { return exists(s_, pred, until, nullptr, slot.context()); });
      if (rc == ZNONODE) continue;  // the predecessor left already: look again
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
  }
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

namespace sqlock::zookeeper {

std::string znode_name(std::string_view name) {
  return detail::escape(name);
}

std::optional<std::string> lock_name(std::string_view znode) {
  if (znode.empty()) return std::nullopt;
  auto n = detail::unescape(znode);
  if (!n || n->empty() || detail::escape(*n) != znode) return std::nullopt;
  return n;
}

}  // namespace sqlock::zookeeper
