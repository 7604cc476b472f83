// The ZooKeeper backend: the seam's calls on the lock queue (zookeeper_queue.hpp) over one session
// per backend object (zookeeper_connection.hpp), replaced when it expires; a fair acquire() that
// waits in the queue and retries connection trouble within the caller's deadline and always leaves
// the queue when it gives up; loss reported at once when a session expires (zookeeper_losses.hpp);
// list and force_release.
#include <algorithm>
#include <thread>
#include <type_traits>

#include "sqlock/random.hpp"
#include "sqlock/url.hpp"
#include "sqlock/zookeeper/zookeeper.hpp"
#include "zookeeper_diagnostics.hpp"
#include "zookeeper_keeper.hpp"
#include "zookeeper_layout.hpp"
#include "zookeeper_losses.hpp"
#include "zookeeper_queue.hpp"
#include "zookeeper_url.hpp"

namespace sqlock {
namespace zookeeper {
namespace {

using namespace detail;

class zk_backend final : public backend,
                         public store_admin,
                         public hold_breaker,
                         public waiter_lister {
 public:
  explicit zk_backend(options o)
      : opts_(checked_options(std::move(o))),
        root_(normalized_root(opts_.root)),
        layout_(make_layout(opts_.compat, root_)),
        losses_([this](std::uint64_t epoch) { return book_.take_epoch(epoch); },
                [this](const node_record& rec) { report_lost(rec.name, rec.owner); }),
        sessions_(opts_, stats_, losses_.sink(), [this](session& s, steady_time until) {
          queue(s).ensure_path(layout_->base(), until);
        }) {}

  ~zk_backend() override {
    // Closing the session ends it on the server at once: its ephemeral nodes (a waiter's
    // queue node, a hold) are deleted now, not at the session timeout.
    sessions_.close_now();
    losses_.stop();  // before the members go: no report runs on a half-destroyed backend
  }

  // ---- the seam ----

  std::optional<lease_info> try_acquire(const lock_request& req, steady_time deadline) override {
    check_request(req);
    return with_session(deadline, [&](session& s) -> std::optional<lease_info> {
      auto until = exchange_bound(deadline, opts_.timeout);
      lock_queue q = queue(s);
      if (auto rec = book_.of(req.owner, s.epoch)) {  // a retried attempt of this owner
        auto list = q.list(rec->parent, until);
        auto me = find_node(list, rec->znode);
        if (me && layout_->turn_of(list, *me).holds) return lease_sent(*rec, clock::now());
        if (!me)
          book_.forget(req.owner);
        else
          q.remove(*rec, until);
        return std::nullopt;
      }
      const std::string parent = q.parent_of(req.name);
      q.settle(parent, until);
      if (!admits(q.list(parent, until), req)) return std::nullopt;  // busy: one read, no write
      auto sent = clock::now();
      std::optional<std::vector<queue_node>> listing;
      node_record rec;
      try {
        rec = q.create(req, deadline, &listing);
      } catch (const connection_error&) {
        leave(req, clock::now(), true);  // the create may have made a node: purge it
        throw;
      }
      try {
        if (!listing) sent = clock::now();
        auto list = listing ? std::move(*listing) : q.list(parent, until);
        auto me = find_node(list, rec.znode);
        if (me) check_permits(list, *me, req);
        if (me && layout_->turn_of(list, *me).holds) return lease_sent(rec, sent);
      } catch (...) {
        leave(req, clock::now() + milliseconds(250), false);
        throw;
      }
      q.remove(rec, until);
      return std::nullopt;
    });
  }

  // The fair lock recipe: the first attempt queues the owner's node, each later one looks
  // where it stands; a wait watches the node it waits for (or the queue behind permits).
  // Driven asynchronously (arm()), a busy attempt sets that watch itself and arm() hands its
  // event the request's wake-up: no thread waits on it. Whatever way the request ends without
  // the lock, its node leaves the queue (cancel()).
  class fair_acquisition final : public acquisition {
   public:
    fair_acquisition(zk_backend& b, lock_request req, const wait_policy& policy)
        : b_(b), req_(std::move(req)), min_attempt_(policy.min_attempt) {
      b_.check_request(req_);
    }
    ~fair_acquisition() override { st_.slot.reset(); }  // before the session it watches on

    std::optional<lease_info> attempt(steady_time deadline) override {
      threw_ = true;
      try {
        std::shared_ptr<session> s;
        try {
          s = b_.sessions_.live(exchange_bound(deadline, b_.connect_timeout()));
        } catch (...) {
          // No session (the backend is closing, or none can be had now): let go of the old
          // one, so that a close is not held up until this request ends.
          st_.slot.reset();
          session_.reset();
          throw;
        }
        if (s != session_) {
          st_.slot.reset();
          session_ = s;
        }
        auto q = b_.queue(*s);
        if (driven_) q.after_wake(st_);
        auto got = q.look(st_, req_, deadline, b_.opts_.timeout);
        // Driven asynchronously: the watch is set now, so that arm() needs no exchange.
        if (!got && driven_) q.watch(st_, deadline, b_.opts_.timeout);
        threw_ = false;
        return got;
      } catch (const session_gone&) {
        // The session expired and its node with it: the next attempt queues again.
        b_.book_.forget(req_.owner);
        st_.rec.reset();
        throw;
      }
    }

    void wait(steady_time until, const std::stop_token& stop) override {
      if (session_) b_.queue(*session_).await(st_, until, stop, b_.opts_.timeout);
    }

    // The watch the last attempt set wakes the request; before the first such attempt (and
    // when the queue changed as the watch was set) the next attempt comes at once.
    std::optional<steady_time> arm(steady_time until, waker wake) override {
      driven_ = true;
      if (!session_ || !st_.slot || st_.slot->arm(std::move(wake))) return clock::now();
      return std::min(until, st_.recheck_at);
    }
    void disarm() noexcept override {
      if (st_.slot) st_.slot->disarm();
    }

    void cancel() noexcept override {
      st_.slot.reset();
      // After an error a create's outcome may be unknown: purge the owner's nodes too.
      b_.leave(req_, clock::now() + min_attempt_, threw_);
    }

    // The node's delete is sent and `then` called when it is answered: the cancels of many
    // requests ending at once travel together on the session instead of one round trip each.
    void cancel_then(std::function<void()> then) noexcept override {
      st_.slot.reset();
      if (threw_ || !b_.connected()) {  // as cancel(), bounded: a delete sent now would wait
        cancel();                       // for the reconnect
        return then();
      }
      b_.leave_then(req_, std::move(then));
    }

   private:
    zk_backend& b_;
    lock_request req_;
    milliseconds min_attempt_;
    std::shared_ptr<session> session_;  // of the last attempt
    detail::turn_state st_;
    bool threw_ = false;   // the last attempt ended in an error
    bool driven_ = false;  // driven asynchronously: attempts set the watch, arm() waits on it
  };

  std::unique_ptr<acquisition> make_acquisition(const lock_request& req,
                                                const wait_policy& policy) override {
    return std::make_unique<fair_acquisition>(*this, req, policy);
  }

  bool renew(const lease_info& lease, milliseconds, steady_time deadline) override {
    auto rec = book_.find(lease.owner);
    if (!rec) return false;
    auto s = sessions_.current();
    if (!s || s->epoch != rec->epoch || s->gone()) {
      book_.forget(lease.owner);
      return false;
    }
    // Suspended (disconnected, session maybe alive): unknown until the session timeout has
    // passed without a reconnect, then lost.
    auto suspended = [&]() -> bool {
      std::lock_guard g(s->m);
      if (s->connected) return false;
      if (clock::now() - s->disconnected_since >= s->timeout()) return true;
      throw connection_error("ZooKeeper session suspended (disconnected); state of lock '" +
                             lease.name + "' unknown until reconnect or session timeout");
    };
    if (suspended()) return false;
    int rc = exists(*s, rec->path, exchange_bound(deadline, opts_.timeout));
    if (rc == ZOK) return true;
    if (rc == ZNONODE || is_session_gone(rc)) {
      book_.forget(lease.owner);
      return false;
    }
    if (is_connection_loss(rc)) {
      stats_.connection_losses++;
      if (suspended()) return false;
    }
    fail(rc, "exists(" + rec->path + ")");
  }

  bool release(const lease_info& lease, steady_time deadline) override {
    auto rec = book_.find(lease.owner);
    if (rec) {
      auto s = sessions_.current();
      if (!s || s->epoch != rec->epoch) {  // gone with its session
        book_.forget(lease.owner);
        return false;
      }
      // release=async: sent, not waited for (zookeeper_release.hpp); not sent: waited for.
      if (opts_.async_release && !s->gone() && queue(*s).remove_async(*rec)) return true;
    }
    try {
      return with_session(deadline, [&](session& s) -> bool {
        auto until = exchange_bound(deadline, opts_.timeout);
        lock_queue q = queue(s);
        if (rec) return q.remove(*rec, until);
        // Not ours (another object or process, or a foreign token): look the owner up.
        if (lease.name.empty()) return false;
        const std::string parent = q.parent_of(lease.name);
        for (auto& n : q.list(parent, until)) {
          if (n.owner != lease.owner) continue;
          return q.remove(
              {lease.name, n.owner, parent, parent + "/" + n.znode, n.znode, s.epoch, 0}, until);
        }
        return false;
      });
    } catch (const session_gone&) {
      book_.forget(lease.owner);
      return false;  // the session that held it is gone, and with it the node
    }
  }

  // The holds of every lock under the layout's base (a peer's layout: the znodes right under the
  // root, so a lock whose name is a deeper path is not listed), peers' holds included.
  std::vector<lock_status> list(std::string_view prefix) override {
    std::vector<lock_status> out;
    for (auto& f : nodes_of(prefix, true)) {
      lock_status ls;
      ls.name = std::move(f.name);
      ls.owner = f.node.owner;
      ls.fence = static_cast<std::uint64_t>(f.stat.czxid);
      ls.acquired_at = format_utc_ms(f.stat.ctime);
      ls.mode = layout_->name().empty() ? "session" : layout_->name();
      ls.holder = std::move(f.data);
      ls.kind = f.node.kind;
      ls.permits = f.node.permits;
      out.push_back(std::move(ls));
    }
    return out;
  }

  // The nodes of every queue under the layout's base that do not hold yet, in queue order:
  // position 1 is the next in line. A node's data is its holder text, its ctime when it queued.
  std::vector<waiting_request> waiting(std::string_view prefix) override {
    std::vector<waiting_request> out;
    for (auto& f : nodes_of(prefix, false)) {
      waiting_request w;
      const bool same_queue = !out.empty() && out.back().name == f.name;
      w.position = same_queue ? out.back().position + 1 : 1;
      w.name = std::move(f.name);
      w.owner = f.node.owner;
      w.holder = std::move(f.data);
      w.kind = f.node.kind;
      w.permits = f.node.permits;
      w.since = format_utc_ms(f.stat.ctime);
      out.push_back(std::move(w));
    }
    return out;
  }

  // Every holder of a name (a shared lock's readers, a semaphore's permits): force_release
  // ends them all.
  // No audit trail here: the actor (who forced it) is not kept.
  bool force_release(std::string_view name, std::string_view /*actor*/) override {
    layout_->check_name(name);
    return with_session(admin_until(), [&](session& s) {
      lock_queue q = queue(s);
      const std::string parent = q.parent_of(name);
      bool removed = false;
      for (const auto& n : holders(q.list(parent, admin_until())))
        removed |= q.remove(
            {std::string(name), n.owner, parent, parent + "/" + n.znode, n.znode, s.epoch, 0},
            admin_until());
      return removed;
    });
  }

  store_admin* admin() noexcept override { return this; }
  hold_breaker* breaker() noexcept override { return this; }
  waiter_lister* waiters() noexcept override { return this; }

  capabilities caps() const noexcept override {
    capabilities c;
    c.fencing = true;
    c.fencing_safe = true;  // zxids rise across leader changes
    c.notify = true;
    c.fair = true;
    c.session_bound = true;
    c.linger = false;  // an ephemeral node ends with its session
    c.holder_text = true;
    c.listed_as_taken = true;
    c.cross_process = true;
    c.shared = layout_->shared();
    c.permits = layout_->permits();
    return c;
  }

  std::string describe() const override {
    std::string d = "zookeeper://";
    if (!opts_.user.empty()) d += opts_.user + ":***@";
    d += opts_.hosts + root_ + " (session " + std::to_string(opts_.session_timeout.count()) + "ms)";
    if (!opts_.compat.empty()) d += " compat=" + opts_.compat;
    if (opts_.async_release) d += " release=async";
    return d;
  }
  std::string kind() const override { return "zookeeper"; }
  store_diagnostics* diagnostics() noexcept override { return &diagnostics_; }

  // ---- for the public helpers ----

  statistics snapshot() const {
    statistics st;
    st.sessions = stats_.sessions.load();
    st.expirations = stats_.expirations.load();
    st.watch_events = stats_.watch_events.load();
    st.woken_not_first = stats_.woken_not_first.load();
    st.waiting = stats_.waiting.load();
    st.nodes_created = stats_.nodes_created.load();
    st.lost_replies_found = stats_.lost_replies_found.load();
    st.connection_losses = stats_.connection_losses.load();
    return st;
  }

  void close() { sessions_.close_now(); }

  session_credentials credentials() {
    auto s = sessions_.live(admin_until());
    const clientid_t* id = zoo_client_id(s->zh);
    if (!id) throw connection_error("ZooKeeper backend has no session");
    return session_credentials{id->client_id, std::string(id->passwd, sizeof id->passwd),
                               zoo_recv_timeout(s->zh)};
  }

 private:
  void check_request(const lock_request& req) const {
    layout_->check_name(req.name);
    if ((req.kind == lock_kind::shared && !layout_->shared()) ||
        (req.kind == lock_kind::permit && !layout_->permits()))
      throw unsupported("ZooKeeper compat=" + opts_.compat + " has no " +
                        (req.kind == lock_kind::shared ? "shared locks" : "permits"));
    if (req.owner.empty()) throw config_error("owner token must not be empty");
    if (req.kind == lock_kind::permit && req.permits == 0)
      throw config_error("a semaphore needs at least 1 permit");
  }

  static std::optional<std::size_t> find_node(const std::vector<queue_node>& q,
                                              const std::string& znode) {
    for (std::size_t i = 0; i < q.size(); ++i)
      if (q[i].znode == znode) return i;
    return std::nullopt;
  }

  // The nodes of queue `q` that hold.
  std::vector<queue_node> holders(const std::vector<queue_node>& q) const {
    std::vector<queue_node> out;
    for (std::size_t i = 0; i < q.size(); ++i)
      if (layout_->turn_of(q, i).holds) out.push_back(q[i]);
    return out;
  }

  // A node as the administrative reads found it: its lock's name, the node, its data (the
  // holder text) and its stat.
  struct found_node {
    std::string name;
    queue_node node;
    std::string data;
    Stat stat{};
  };

  // The nodes that hold (`holding`) or wait (not `holding`) in every queue under the layout's
  // base whose name starts with `prefix`: by name, each queue in its order. A node gone before
  // its data was read is left out.
  std::vector<found_node> nodes_of(std::string_view prefix, bool holding) {
    auto found = with_session(admin_until(), [&](session& s) {
      lock_queue q = queue(s);
      std::vector<found_node> out;
      for (const auto& child : q.children(layout_->base(), admin_until())) {
        auto name = layout_->lock_of(child);
        if (!name || !name->starts_with(prefix)) continue;
        const std::string parent = layout_->parent_of(*name);
        auto nodes = q.list(parent, admin_until());
        for (std::size_t i = 0; i < nodes.size(); ++i) {
          if (layout_->turn_of(nodes, i).holds != holding) continue;
          found_node f{*name, nodes[i], {}, {}};
          const std::string path = parent + "/" + f.node.znode;
          auto until = admin_until();
          int rc = call(s, until, [&] { return get_data(s, path, until, f.data, f.stat); });
          if (rc == ZNONODE) continue;  // released or given up meanwhile
          if (rc != ZOK) fail(rc, "get(" + path + ")");
          out.push_back(std::move(f));
        }
      }
      return out;
    });
    std::stable_sort(found.begin(), found.end(),
                     [](const auto& a, const auto& b) { return a.name < b.name; });
    return found;
  }

  // Whether a request for `req` made now would hold at once in queue `q` (busy otherwise);
  // config_error when permit nodes of another N are queued.
  bool admits(const std::vector<queue_node>& q, const lock_request& req) const {
    queue_node me{"", req.owner, q.empty() ? 0 : q.back().seq + 1, req.kind, req.permits};
    check_permits(q, q.size(), req);
    auto with_me = q;
    with_me.push_back(me);
    return layout_->turn_of(with_me, q.size()).holds;
  }

  lock_queue queue(session& s) { return lock_queue(s, acl(), stats_, book_, *layout_, releases_); }

  lease_info lease_sent(const node_record& rec, steady_time sent) {
    auto l = lock_queue::lease_of(rec);
    l.sent = sent;
    return l;
  }

  const ACL_vector* acl() const {
    return opts_.creator_acl ? &ZOO_CREATOR_ALL_ACL : &ZOO_OPEN_ACL_UNSAFE;
  }

  milliseconds connect_timeout() const {
    return opts_.connect_timeout.count() > 0 ? opts_.connect_timeout : opts_.session_timeout;
  }
  // An administrative call (list, force_release) has no caller deadline: each exchange is
  // bounded by the I/O timeout.
  steady_time admin_until() const { return clock::now() + opts_.timeout; }

  // Removes the node the owner of `req` queued with, if it still stands, waiting for the answer
  // until `until` (a delete not answered by then still goes on in the background); with
  // `purge`, also any node of the owner a create with a lost reply made (in the background).
  // Never throws.
  void leave(const lock_request& req, steady_time until, bool purge) noexcept {
    auto rec = book_.find(req.owner);
    book_.forget(req.owner);
    auto s = sessions_.current();
    if (!s || s->gone()) return;  // the nodes went with their session
    try {
      lock_queue q = queue(*s);
      if (purge) purge_later(*s, q.parent_of(req.name), layout_->node_prefix(req));
      if (rec && rec->epoch == s->epoch) q.remove(*rec, until);
    } catch (...) {
      // Given up: the background delete (or the session's end) removes it.
    }
  }

  // True while the current session is connected.
  bool connected() noexcept {
    auto s = sessions_.current();
    if (!s) return false;
    std::lock_guard g(s->m);
    return s->connected;
  }

  // leave() without its purge, not waiting for the delete: `then` is called at its first
  // answer (on the session's completion thread), or at once when there is nothing to delete.
  // Never throws.
  void leave_then(const lock_request& req, std::function<void()> then) noexcept {
    auto rec = book_.find(req.owner);
    book_.forget(req.owner);
    auto s = sessions_.current();
    if (!s || s->gone() || !rec || rec->epoch != s->epoch) return then();
    queue(*s).remove_then(*rec, std::move(then));
  }

  // Runs `f` on a live session; a session that turns out gone is replaced once.
  template <class F>
  std::invoke_result_t<F&, session&> with_session(steady_time until, F&& f) {
    for (int attempt = 0;; ++attempt) {
      auto s = sessions_.live(exchange_bound(until, connect_timeout()));
      try {
        return f(*s);
      } catch (const session_gone&) {
        if (attempt >= 1 || clock::now() >= until) throw;
      }
    }
  }

  options opts_;
  std::string root_;
  std::unique_ptr<layout> layout_;
  counters stats_;
  node_book book_;
  release_tracker releases_;
  loss_reporter losses_;  // before sessions_, which reports expired sessions to it
  session_keeper sessions_;
  zk_diagnostics diagnostics_{sessions_, opts_};
};

zk_backend* as_zk(const backend& b) {
  auto* z = dynamic_cast<const zk_backend*>(&b);
  if (!z) throw usage_error("not a ZooKeeper backend: " + b.describe());
  return const_cast<zk_backend*>(z);
}

}  // namespace

std::shared_ptr<backend> open(const options& opts) {
  return std::make_shared<zk_backend>(opts);
}

statistics stats(const backend& b) {
  return as_zk(b)->snapshot();
}

session_credentials current_session(backend& b) {
  return as_zk(b)->credentials();
}

void close(backend& b) {
  as_zk(b)->close();
}

}  // namespace zookeeper

}  // namespace sqlock
