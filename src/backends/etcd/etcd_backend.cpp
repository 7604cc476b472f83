// The etcd backend: one etcd lease per hold, the key layout of etcd's concurrency.Mutex, a fair
// wait on the predecessor's key, and a watch over the prefix that reports a held key's deletion
// (lease expired or revoked, key deleted by `sqlock release --force`) at once.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <thread>

#include "core/release_sender.hpp"
#include "etcd_connection.hpp"
#include "etcd_diagnostics.hpp"
#include "etcd_queue.hpp"
#include "etcd_wait.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/etcd/etcd.hpp"
#include "sqlock/random.hpp"
#include "sqlock/url.hpp"

namespace sqlock::etcd {

options options_from_url(const url& u);

namespace {

using detail::json;
using clock = std::chrono::steady_clock;

// Longest lock name accepted (bytes): keys stay far below etcd's request size limit.
constexpr std::size_t max_name_bytes = 4096;

void check_name(const std::string& name) {
  if (name.empty()) throw config_error("lock name must not be empty");
  if (name.size() > max_name_bytes)
    throw config_error("lock name is " + std::to_string(name.size()) +
                       " bytes; etcd names may have at most " + std::to_string(max_name_bytes));
}

// What a lease_info of this backend carries: the key, and when its lease was last extended.
struct state {
  state(detail::hold hold, steady_time sent)
      : h(std::move(hold)), refreshed(sent.time_since_epoch().count()) {}
  detail::hold h;
  std::atomic<steady_time::rep> refreshed;
};

class etcd_backend final : public backend,
                           public store_admin,
                           public hold_breaker,
                           public waiter_lister,
                           public std::enable_shared_from_this<etcd_backend> {
 public:
  explicit etcd_backend(const options& o)
      : o_(o),
        gw_(o),
        watch_(
            gw_, o.prefix, [this](const std::string& key) { deleted(key); },
            [this](steady_time deadline) { recheck(deadline); }),
        q_(gw_, o.prefix, watch_) {
    if (o.async_release) releases_ = std::make_unique<sqlock::detail::release_sender>(o.timeout);
  }
  ~etcd_backend() override { watch_.stop(); }

  std::optional<lease_info> try_acquire(const lock_request& req, steady_time deadline) override {
    check_name(req.name);
    own_release_settled(req.name, deadline);
    watch_.start(deadline);  // beside the attempt: held() waits for it to be confirmed
    auto h = q_.try_take(req, deadline);
    if (!h) return std::nullopt;
    return held(req, *h);  // empty when the new key was deleted at once: not held
  }

  // etcd's Lock, fair: a key queued by the first attempt, waits on the deletion feed.
  class fair_acquisition final : public acquisition {
   public:
    fair_acquisition(etcd_backend& b, const lock_request& req) : b_(b), w_(b.q_, req) {
      check_name(req.name);
    }
    std::optional<lease_info> attempt(steady_time deadline) override {
      b_.own_release_settled(req().name, deadline);
      auto h = w_.attempt(deadline);
      if (!h) return std::nullopt;
      auto l = b_.held(req(), *h);
      if (!l)
        throw lock_lost("etcd: the key for '" + req().name +
                        "' was deleted as it was taken (released by force, or its lease revoked)");
      return l;
    }
    void wait(steady_time until, const std::stop_token& stop) override { w_.wait(until, stop); }
    // The deletion watch's delivery of the key waited for wakes the request: no thread waits.
    std::optional<steady_time> arm(steady_time until, waker wake) override {
      return w_.arm(until, std::move(wake));
    }
    void disarm() noexcept override { w_.disarm(); }
    void cancel() noexcept override { w_.cancel(); }

   private:
    const lock_request& req() const { return w_.request(); }
    etcd_backend& b_;
    detail::queue::waiter w_;
  };

  std::unique_ptr<acquisition> make_acquisition(const lock_request& req,
                                                const wait_policy&) override {
    return std::make_unique<fair_acquisition>(*this, req);
  }

  bool renew(const lease_info& l, milliseconds, steady_time deadline) override {
    auto s = std::static_pointer_cast<state>(l.state);
    if (!s) return false;
    try {
      // The deletion watch's restarter replaces a stream that ended; should it not have yet, this
      // waits for it, confirmed before the read below, which then sees any deletion it missed.
      watch_.confirmed(deadline);
    } catch (const connection_error&) {
      // No member now: the renewal below finds out.
    }
    auto sent = clock::now();
    bool alive = q_.keep_alive(s->h, deadline) && q_.still_holds(s->h, deadline);
    if (alive)
      s->refreshed = sent.time_since_epoch().count();
    else
      forget(s->h.key);
    return alive;
  }

  bool release(const lease_info& l, steady_time deadline) override {
    auto s = std::static_pointer_cast<state>(l.state);
    if (!s) {
      own_release_settled(l.name, deadline);  // a release of ours on its way lands first
      auto found = q_.find_owner(l.name, l.owner, deadline);
      if (!found) return false;
      s = std::make_shared<state>(*found, steady_time{});  // an unknown age: never a reserved lease
    }
    const steady_time refreshed(steady_time::duration(s->refreshed.load()));
    // Our own deletion is not a loss. release=async: a key this client holds (not reported
    // lost) is deleted by the sender while the caller goes on (core/release_sender.hpp); a
    // deletion whose outcome is unknown ends as every release without an answer does
    // (give_up revokes the key's lease in the background; at worst the lease ends at its TTL).
    if (forget(s->h.key) && releases_) {
      releases_->post(
          l.name, [this, h = s->h, refreshed](steady_time d) { q_.give_up(h, refreshed, d); },
          deadline);
      return true;
    }
    return q_.give_up(s->h, refreshed, deadline);
  }

  std::vector<lock_status> list(std::string_view prefix) override {
    return q_.list(prefix, clock::now() + o_.timeout);
  }

  std::vector<waiting_request> waiting(std::string_view prefix) override {
    return q_.waiting(prefix, clock::now() + o_.timeout);
  }

  // No audit trail here: the actor (who forced it) is not kept.
  bool force_release(std::string_view name, std::string_view /*actor*/) override {
    return q_.delete_holder(std::string(name), clock::now() + o_.timeout);
  }

  store_admin* admin() noexcept override { return this; }
  hold_breaker* breaker() noexcept override { return this; }
  waiter_lister* waiters() noexcept override { return this; }

  capabilities caps() const noexcept override {
    capabilities c;
    c.fencing = true;
    c.holder_text = true;
    c.listed_as_taken = true;
    c.cross_process = true;
    c.fair = true;
    c.linger = false;       // an etcd lease cannot be shortened once granted
    c.fencing_safe = true;  // create revisions are raft-ordered: they rise across leader changes
    c.shared = true;        // keys of every kind in one queue (etcd_kinds.hpp)
    c.permits = true;
    return c;
  }

  std::string describe() const override {
    std::string s = o_.tls ? "etcds://" : "etcd://";
    for (std::size_t i = 0; i < o_.endpoints.size(); ++i)
      s += (i ? "," : "") + o_.endpoints[i].host + ":" + std::to_string(o_.endpoints[i].port);
    return s + "/" + o_.prefix + (releases_ ? " release=async" : "");
  }
  std::string kind() const override { return "etcd"; }
  store_diagnostics* diagnostics() noexcept override { return &diagnostics_; }
  std::string mode() const override { return "lease"; }

  void verify(steady_time deadline) override { q_.ping(exchange_bound(deadline, o_.timeout)); }

 private:
  // The hold of `t`, reported lost at once when its key is deleted from now on; empty when it
  // already was (then it is not held).
  std::optional<lease_info> held(const lock_request& req, const detail::taken& t) {
    auto s = std::make_shared<state>(t.h, t.sent);
    {
      std::lock_guard g(held_m_);
      held_[t.h.key] = {req.name, req.owner, t.h};
    }
    // The deletion watch delivers the deletions after the revision it started at: a deletion before
    // (only possible when it started after the key was put) is found by one read.
    bool checked = true;
    try {
      auto watch_at = watch_.confirmed(clock::now() + o_.timeout);
      if (watch_at.revision >= t.h.revision)
        checked = q_.still_holds(t.h, clock::now() + o_.timeout);
    } catch (const connection_error&) {
      // No member confirms a watch now: renewals restart it and find a lost hold.
    }
    if (!checked) {
      forget(t.h.key);
      try {
        q_.give_up(t.h, steady_time{}, clock::now() + o_.timeout);  // ends its lease
      } catch (const error&) {
        // The lease ends at its TTL.
      }
      return std::nullopt;
    }
    lease_info l{req.name, req.owner, static_cast<std::uint64_t>(t.h.revision), s};
    l.waited = t.waited;
    l.sent = t.sent;
    return l;
  }

  // Stops reporting the deletion of `key` as a loss; false when it was not held (already
  // reported lost, or never taken here).
  bool forget(const std::string& key) {
    std::lock_guard g(held_m_);
    return held_.erase(key) > 0;
  }

  // release=async: waits (until `deadline`) for this client's own release of `name` still on its
  // way, so that an acquire does not queue behind it; should it not end in time, the acquire
  // queues behind it as behind any holder.
  void own_release_settled(const std::string& name, steady_time deadline) {
    if (releases_) releases_->settled(name, deadline);
  }

  // From the deletion watch's reader thread: a deleted key, perhaps one this backend holds.
  void deleted(const std::string& key) {
    auto self = weak_from_this().lock();  // alive through the report; none while destroyed
    if (!self) return;
    held_key who;
    {
      std::lock_guard g(held_m_);
      auto it = held_.find(key);
      if (it == held_.end()) return;
      who = std::move(it->second);
      held_.erase(it);
    }
    report_lost(who.name, who.owner);
  }

  // From the deletion watch's restarter thread, once a stream that ended by itself was replaced by
  // a confirmed one: the deletions in between were not delivered, so a read of every held key (one
  // transaction per 100) finds them (a later deletion comes on the new stream). An error (no member
  // answers) makes the deletion watch call again after a pause. The destructor stops the deletion
  // watch, which waits for this call.
  void recheck(steady_time deadline) {
    if (weak_from_this().expired()) return;  // being destroyed: nobody to tell
    std::vector<held_key> holds;
    {
      std::lock_guard g(held_m_);
      for (auto& [key, who] : held_) holds.push_back(who);
    }
    std::vector<detail::hold> keys;
    for (const auto& who : holds) keys.push_back(who.h);
    const auto alive = q_.still_hold(keys, deadline);
    for (std::size_t i = 0; i < holds.size(); ++i) {
      const auto& who = holds[i];
      if (alive[i]) continue;
      {
        std::lock_guard g(held_m_);
        auto it = held_.find(who.h.key);  // not released meanwhile, nor taken again
        if (it == held_.end() || it->second.h.revision != who.h.revision) continue;
        held_.erase(it);
      }
      report_lost(who.name, who.owner);
    }
  }

  options o_;
  detail::gateway gw_;
  detail::etcd_diagnostics diagnostics_{gw_, o_};
  detail::deletion_watch watch_;
  detail::queue q_;
  // A key this client holds: whose it is, and the hold (its create revision tells a later hold
  // of the same key name apart).
  struct held_key {
    std::string name, owner;
    detail::hold h;
  };
  std::mutex held_m_;
  std::map<std::string, held_key> held_;  // by key
  // release=async: the sender of releases (destroyed first: it flushes through q_).
  std::unique_ptr<sqlock::detail::release_sender> releases_;
};

}  // namespace

std::shared_ptr<backend> open(const options& o) {
  if (o.endpoints.empty()) throw config_error("etcd store needs at least one endpoint");
  if (o.timeout.count() <= 0) throw config_error("etcd timeout must be > 0");
  return std::make_shared<etcd_backend>(o);
}

}  // namespace sqlock::etcd

namespace sqlock::backends {
void register_etcd() {
  auto factory = [](const url& u) { return etcd::open(etcd::options_from_url(u)); };
  register_backend("etcd", factory);
  register_backend("etcds", factory);
}
}  // namespace sqlock::backends
