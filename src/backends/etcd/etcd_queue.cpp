// The lock queue's writes and waits: taking a key (try_take), a waiter's look at where its key
// stands and its wait, keep-alive, release and the owner's key (see etcd_queue.hpp). The
// administrative reads are in etcd_queue_admin.cpp.
#include "etcd_queue.hpp"

#include "etcd_kinds.hpp"
#include "etcd_requests.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <thread>

#include "sqlock/errors.hpp"
#include "sqlock/etcd/etcd.hpp"
#include "sqlock/random.hpp"
#include "sqlock/url.hpp"

namespace sqlock::etcd::detail {

namespace {

using clock = std::chrono::steady_clock;

std::string hex(std::int64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return buf;
}

// The first-created key under `pfx`.
json first_of(const std::string& pfx) {
  return by_creation(pfx, "ASCEND", 1);
}

// The two last-created keys under `pfx`, newest first.
json newest_two(const std::string& pfx) {
  return by_creation(pfx, "DESCEND", 2);
}

// Up to the first 64 keys under `pfx`, first created first: a waiter behind fewer knows every
// key before its own and waits for their deletions without reading again.
json queue_start(const std::string& pfx) {
  return by_creation(pfx, "ASCEND", 64);
}

// A transaction that puts `key` for `req` on `lease` unless it exists, then reads `range`.
json put_then_read(const std::string& key, const lock_request& req, std::int64_t lease,
                   const json& range) {
  json absent = {
      {"key", b64(key)}, {"target", "CREATE"}, {"result", "EQUAL"}, {"create_revision", "0"}};
  json put = {{"key", b64(key)}, {"value", b64(value_for(req))}, {"lease", decimal(lease)}};
  return {{"compare", json::array({absent})},
          {"success", json::array({{{"request_put", put}}, {{"request_range", range}}})}};
}

// The index of `key` in `q`; q.size() when it is not there.
std::size_t index_of(const std::vector<queue_key>& q, const std::string& key) {
  std::size_t i = 0;
  while (i < q.size() && q[i].key != key) ++i;
  return i;
}

hold hold_of(const json& kv, std::int64_t ttl_s) {
  return hold{unb64(kv.value("key", "")), num(kv, "lease"), num(kv, "create_revision"), ttl_s};
}

}  // namespace

queue::queue(gateway& gw, std::string prefix, deletion_watch& deletions)
    : gw_(gw), prefix_(std::move(prefix)), watch_(deletions), reserve_(gw) {}

// etcd leases count whole seconds (and the server raises a TTL below its minimum, about 2 s):
// round up, so the server never frees a hold before the client's lease ends.
std::int64_t queue::ttl_for(milliseconds lease) {
  return std::max<std::int64_t>(1, (lease.count() + 999) / 1000);
}

void queue::revoke_quietly(std::int64_t lease, steady_time deadline) {
  try {
    gw_.call("lease/revoke", {{"ID", decimal(lease)}}, deadline);
  } catch (const error&) {
    // Gone already, or the store is unreachable: the lease then ends at its TTL.
  }
}

json queue::put_txn(const json& txn, std::int64_t lease, steady_time deadline) {
  try {
    return gw_.call("kv/txn", txn, deadline);
  } catch (...) {
    reserve_.revoke_later(lease);  // the key may have been put: its lease must end
    throw;
  }
}

std::optional<taken> queue::try_take(const lock_request& req, steady_time deadline) {
  if (req.kind != lock_kind::exclusive) return try_take_kind(req, deadline);
  const std::string pfx = lock_prefix(prefix_, req.name);
  const auto sp = reserve_.take(ttl_for(req.lease), deadline);
  const std::string key = pfx + hex(sp.id);
  json cmp = range_of(pfx, prefix_end(pfx));
  cmp["target"] = "CREATE";
  cmp["result"] = "EQUAL";
  cmp["create_revision"] = "0";
  json txn = {
      {"compare", json::array({cmp})},
      {"success",
       json::array(
           {{{"request_put",
              {{"key", b64(key)}, {"value", b64(value_for(req))}, {"lease", decimal(sp.id)}}}}})},
      {"failure", json::array({{{"request_range", first_of(pfx)}}})}};
  json r = put_txn(txn, sp.id, deadline);
  if (r.value("succeeded", false))
    return taken{hold{key, sp.id, num(r["header"], "revision"), sp.ttl_s}, sp.sent};
  reserve_.put_back(sp);  // no key was attached: the lease serves the next attempt
  const auto& kvs = kvs_of(r["responses"][0]["response_range"]);
  if (kvs.empty() || key_of(kvs[0]).owner != req.owner) return std::nullopt;
  // Ours: an earlier attempt whose reply was lost put it. Its lease was granted at an unknown
  // time: extend it now and measure the hold from this request.
  hold h = hold_of(kvs[0], sp.ttl_s);
  auto sent = clock::now();
  if (!keep_alive(h, deadline)) return std::nullopt;
  return taken{h, sent};
}

std::optional<taken> queue::try_take_kind(const lock_request& req, steady_time deadline) {
  const std::string pfx = lock_prefix(prefix_, req.name);
  auto q = keys_of(kvs_of(gw_.call("kv/range", all_of(pfx), deadline)));
  for (std::size_t i = 0; i < q.size(); ++i) {
    if (q[i].owner != req.owner) continue;
    // Ours: an earlier attempt whose reply was lost put it, at an unknown time.
    hold h{q[i].key, q[i].lease, q[i].revision, ttl_for(req.lease)};
    if (!turn_of(q, i).holds) {
      give_up(h, steady_time{}, deadline);  // a try leaves no waiting key
      return std::nullopt;
    }
    auto sent = clock::now();
    if (!keep_alive(h, deadline)) return std::nullopt;
    return taken{h, sent};
  }
  // Busy without a write when a key put now would not hold.
  q.push_back(queue_key{"", 0, 0, req.owner, req.holder, req.kind, req.permits});
  check_permits(q, q.size() - 1, req);
  if (!turn_of(q, q.size() - 1).holds) return std::nullopt;
  const auto sp = reserve_.take(ttl_for(req.lease), deadline);
  const std::string key = pfx + hex(sp.id);
  json txn = put_then_read(key, req, sp.id, all_of(pfx));
  json r = put_txn(txn, sp.id, deadline);
  if (!r.value("succeeded", false)) {
    reserve_.revoke_later(sp.id);  // a key of this lease exists already: not a reserved lease
    return std::nullopt;
  }
  hold h{key, sp.id, num(r["header"], "revision"), sp.ttl_s};
  auto now = keys_of(kvs_of(r["responses"][1]["response_range"]));
  auto i = index_of(now, key);
  try {
    if (i < now.size()) check_permits(now, i, req);
  } catch (const config_error&) {
    give_up(h, sp.sent, deadline);
    throw;
  }
  if (i < now.size() && turn_of(now, i).holds) return taken{h, sp.sent};
  give_up(h, sp.sent, deadline);  // another request came first: a try leaves no key
  return std::nullopt;
}

queue::waiter::waiter(queue& q, lock_request req)
    : q_(q),
      req_(std::move(req)),
      pfx_(lock_prefix(q.prefix_, req_.name)),
      exclusive_(req_.kind == lock_kind::exclusive) {}

std::optional<taken> queue::waiter::join(steady_time deadline) {
  // The client's deletion watch starts (if it does not run yet) while the key is put; it is
  // confirmed before the wait relies on it.
  q_.watch_.start(deadline);
  if (!subscribed_) subscribed_.emplace(q_.watch_, pfx_, gone_);
  const auto sp = q_.reserve_.take(ttl_for(req_.lease), deadline);
  sent_ = sp.sent;
  const std::string key = pfx_ + hex(sp.id);
  // An exclusive key holds when it is the first; a shared key or a permit looks at all before it.
  const json ahead = exclusive_ ? queue_start(pfx_) : all_of(pfx_);
  json txn = put_then_read(key, req_, sp.id, ahead);
  // An exclusive key just put is the newest: the two newest keys are it and its predecessor.
  if (exclusive_) txn["success"].push_back({{"request_range", newest_two(pfx_)}});
  txn["failure"] =
      json::array({{{"request_range", {{"key", b64(key)}}}}, {{"request_range", ahead}}});
  h_ = hold{key, sp.id, 0, sp.ttl_s};
  auto r = q_.gw_.call("kv/txn", txn, deadline);
  bool put = r.value("succeeded", false);
  h_->revision = put ? num(r["header"], "revision")
                     : num(kvs_of(r["responses"][0]["response_range"]).at(0), "create_revision");
  const auto& first = kvs_of(r["responses"][1]["response_range"]);
  if (exclusive_ && !first.empty() && num(first[0], "create_revision") == h_->revision)
    return taken{*h_, sent_, false};
  const auto read_at = num(r["header"], "revision");
  if (!exclusive_) {
    auto q = keys_of(first);
    auto i = index_of(q, key);
    if (i < q.size()) check_permits(q, i, req_);
    if (i < q.size() && turn_of(q, i).holds) return taken{*h_, sent_, false};
    if (i < q.size()) known_ = look{false, turn_of(q, i).watch, false, false, read_at};
  } else if (put) {
    known_ = look_from(kvs_of(r["responses"][2]["response_range"]),
                       r["responses"][1]["response_range"], *h_, req_.name, read_at);
  }
  // Wait for every key created before ours to go, the one just before ours at a time. The
  // deletion watch delivers every deletion after the revision it started at: when that is not later
  // than the transaction's, what the transaction read is where the wait starts; otherwise
  // (and after the deletion watch restarted) the predecessor is read again.
  watch_at_ = q_.watch_.confirmed(deadline);
  if (watch_at_.revision > read_at) known_.reset();
  // Kept alive at a third of the lease the caller asked for, not of the TTL (whole seconds,
  // rounded up): the hold's lease runs from the last keep-alive sent before the grant, so
  // when the lock comes the core still has two thirds of its lease to renew it in.
  keepalive_every_ =
      std::min(std::chrono::milliseconds(std::max<std::int64_t>(h_->ttl_s, 1) * 1000 / 3),
               std::max(req_.lease / 3, std::chrono::milliseconds(1)));
  next_keepalive_ = sent_ + keepalive_every_;
  return std::nullopt;
}

std::optional<taken> queue::waiter::attempt(steady_time deadline) {
  if (std::exchange(armed_, false) && h_ && !first_) {
    // Woken, or the core's timer came first: what a blocked wait() would have concluded.
    std::lock_guard lk(gone_.m);
    settle();
  }
  if (!h_) {
    try {
      if (auto t = join(deadline)) return t;
    } catch (...) {
      cancel();  // the put's outcome is unknown, or it was refused: leave nothing queued
      throw;
    }
    // Queued behind others: where the key stands (what the transaction read, or one read)
    // is the first look.
  } else if (first_) {
    return taken{*h_, sent_, true};
  } else if (!q_.watch_.live(watch_at_.generation)) {
    watch_at_ = q_.watch_.confirmed(deadline);  // its member went away: read again
    known_.reset();
  }
  if (clock::now() >= next_keepalive_) {
    auto ka_sent = clock::now();
    if (!q_.keep_alive(*h_, deadline))
      throw lock_lost("etcd: the lease of the waiting request for '" + req_.name +
                      "' ended while it waited; the wait was abandoned");
    sent_ = ka_sent;
    next_keepalive_ = ka_sent + keepalive_every_;
  }
  last_ = known_       ? std::move(*known_)
          : exclusive_ ? q_.look_exclusive(pfx_, *h_, req_.name, deadline)
                       : q_.look_kind(pfx_, *h_, req_.name, deadline);
  known_.reset();
  if (last_.holds) return taken{*h_, sent_, true};
  return std::nullopt;
}

bool queue::waiter::deleted_since_read(const std::string& k) const {
  auto it = gone_.keys.find(k);
  return it != gone_.keys.end() && it->second > last_.at;
}

bool queue::waiter::moved() const {
  const auto& w = last_.watch;
  auto gone = [&](const std::string& k) { return deleted_since_read(k); };
  return last_.all ? std::all_of(w.begin(), w.end(), gone) : std::any_of(w.begin(), w.end(), gone);
}

void queue::waiter::settle() {
  // Deletions arrive in revision order: when the head's (or every earlier key's) deletion is
  // seen and ours is not, no key precedes ours any more (later keys have later create
  // revisions).
  if ((last_.head || last_.all) && moved() && !deleted_since_read(h_->key)) {
    first_ = true;
  } else if (!moved() && q_.watch_.live(watch_at_.generation) && clock::now() < next_keepalive_) {
    known_ = last_;  // nothing it waits for went: where it stands needs no read
  }
}

void queue::waiter::wait(steady_time until, const std::stop_token& stop) {
  if (first_ || !h_) return;
  std::unique_lock lk(gone_.m);
  gone_.cv.wait_until(lk, stop, std::min(until, next_keepalive_),
                      [&] { return moved() || !q_.watch_.live(watch_at_.generation); });
  settle();
}

std::optional<steady_time> queue::waiter::arm(steady_time until, std::function<void()> wake) {
  const auto now = clock::now();
  if (first_ || !h_) return now;
  std::lock_guard lk(gone_.m);
  if (moved() || !q_.watch_.live(watch_at_.generation)) {
    settle();
    return now;
  }
  gone_.wake = std::move(wake);
  armed_ = true;
  return std::min(until, next_keepalive_);
}

void queue::waiter::disarm() noexcept {
  std::function<void()> dropped;  // destroyed after the lock is let go
  std::lock_guard lk(gone_.m);
  dropped = std::exchange(gone_.wake, nullptr);
}

void queue::waiter::cancel() noexcept {
  if (!h_) return;
  try {
    q_.revoke_quietly(h_->lease, clock::now() + q_.gw_.timeout());  // leave the queue at once
  } catch (...) {
    // The lease ends at its TTL.
  }
  h_.reset();
  known_.reset();
  first_ = false;
}

queue::look queue::look_exclusive(const std::string& pfx, const hold& h, const std::string& name,
                                  steady_time deadline) {
  // Our key and the one created just before it, and the first keys of the queue up to ours,
  // in one read.
  json pred = newest_two(pfx);
  pred["max_create_revision"] = decimal(h.revision);
  json start = queue_start(pfx);
  start["max_create_revision"] = decimal(h.revision);
  json both = {{"success", json::array({{{"request_range", pred}}, {{"request_range", start}}})}};
  auto pr = gw_.call("kv/txn", both, deadline);
  return look_from(kvs_of(pr["responses"][0]["response_range"]),
                   pr["responses"][1]["response_range"], h, name, num(pr["header"], "revision"));
}

queue::look queue::look_from(const json& ours_and_pred, const json& start, const hold& h,
                             const std::string& name, std::int64_t at) {
  // Ours missing = our lease died; no predecessor = we hold the lock.
  const auto& kvs = ours_and_pred;
  if (kvs.empty() || num(kvs[0], "create_revision") != h.revision)
    throw lock_lost("etcd: the waiting key for '" + name + "' was deleted");
  if (kvs.size() == 1) return {true, {}, false, false, at};
  const auto& first = kvs_of(start);
  if (!start.value("more", false)) {  // every key up to ours: wait for all before it to go
    look all{false, {}, false, true, at};
    for (const auto& kv : first)
      if (num(kv, "create_revision") < h.revision) all.watch.push_back(unb64(kv.value("key", "")));
    return all;
  }
  auto pred_key = unb64(kvs[1].value("key", ""));
  const bool pred_is_head = !first.empty() && unb64(first[0].value("key", "")) == pred_key;
  return {false, {std::move(pred_key)}, pred_is_head, false, at};
}

queue::look queue::look_kind(const std::string& pfx, const hold& h, const std::string& name,
                             steady_time deadline) {
  // Every key up to ours, in creation order: ours (the last) missing = our lease died.
  json upto = all_of(pfx);
  upto["max_create_revision"] = decimal(h.revision);
  auto r = gw_.call("kv/range", upto, deadline);
  auto q = keys_of(kvs_of(r));
  if (q.empty() || q.back().revision != h.revision)
    throw lock_lost("etcd: the waiting key for '" + name + "' was deleted");
  auto t = turn_of(q, q.size() - 1);
  return {t.holds, std::move(t.watch), false, false, num(r["header"], "revision")};
}

bool queue::keep_alive(const hold& h, steady_time deadline) {
  return num(gw_.call("lease/keepalive", {{"ID", decimal(h.lease)}}, deadline), "TTL") > 0;
}

bool queue::still_holds(const hold& h, steady_time deadline) {
  json cmp = {{"key", b64(h.key)},
              {"target", "CREATE"},
              {"result", "EQUAL"},
              {"create_revision", decimal(h.revision)}};
  auto r = gw_.call("kv/txn", {{"compare", json::array({cmp})}}, deadline);
  return r.value("succeeded", false);
}

std::vector<bool> queue::still_hold(const std::vector<hold>& holds, steady_time deadline) {
  // etcd refuses a transaction of more than --max-txn-ops operations (128 by default).
  constexpr std::size_t per_txn = 100;
  std::vector<bool> out;
  out.reserve(holds.size());
  for (std::size_t i = 0; i < holds.size(); i += per_txn) {
    auto reads = json::array();
    const auto end = std::min(holds.size(), i + per_txn);
    for (std::size_t j = i; j < end; ++j)
      reads.push_back({{"request_range", {{"key", b64(holds[j].key)}, {"keys_only", true}}}});
    auto r = gw_.call("kv/txn", {{"success", reads}}, deadline);
    for (std::size_t j = i; j < end; ++j) {
      const auto& kvs = kvs_of(r["responses"][j - i]["response_range"]);
      out.push_back(!kvs.empty() && num(kvs.at(0), "create_revision") == holds[j].revision);
    }
  }
  return out;
}

bool queue::give_up(const hold& h, steady_time refreshed, steady_time deadline) {
  // Delete the key (owner-checked by its create revision: a later hold of the same lease and
  // name has another) and keep the lease as a reserved lease for the next acquisition: one write.
  json cmp = {{"key", b64(h.key)},
              {"target", "CREATE"},
              {"result", "EQUAL"},
              {"create_revision", decimal(h.revision)}};
  json txn = {{"compare", json::array({cmp})},
              {"success", json::array({{{"request_delete_range", {{"key", b64(h.key)}}}}})}};
  bool deleted = false;
  try {
    deleted = gw_.call("kv/txn", txn, deadline).value("succeeded", false);
  } catch (...) {
    reserve_.revoke_later(h.lease);  // unknown outcome: the lease, and the key with it, must end
    throw;
  }
  if (deleted)
    reserve_.put_back(reserved_lease{h.lease, h.ttl_s, refreshed});
  else
    reserve_.revoke_later(h.lease);
  return deleted;
}

std::optional<hold> queue::find_owner(const std::string& name, const std::string& owner,
                                      steady_time deadline) {
  const std::string pfx = lock_prefix(prefix_, name);
  auto r = gw_.call("kv/range", range_of(pfx, prefix_end(pfx)), deadline);
  for (const auto& kv : kvs_of(r))
    if (key_of(kv).owner == owner) return hold_of(kv, 0);
  return std::nullopt;
}

}  // namespace sqlock::etcd::detail
