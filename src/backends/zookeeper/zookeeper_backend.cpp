// ZooKeeper backend on the multithreaded C client: one session per backend object, locks as
// EPHEMERAL_SEQUENTIAL children of a per-lock container node, FIFO waiting on the immediate
// predecessor's watch, fencing tokens from the winning node's czxid.
#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include "sqlock/errors.hpp"
#include "sqlock/url.hpp"
#include "sqlock/zookeeper/zookeeper.hpp"

namespace sqlock {
namespace zookeeper {
namespace {

using clock = std::chrono::steady_clock;

// ---- errors: every ZooKeeper return code is mapped here, and only here ----

// The session this call ran on is gone (expired, closed, auth failed): callers that can start
// over on a new session catch it; everything else sees it as a connection_error.
class session_gone : public connection_error {
 public:
  using connection_error::connection_error;
};

bool is_connection_loss(int rc) {
  return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT;
}
bool is_session_gone(int rc) {
  return rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE || rc == ZCLOSING || rc == ZAUTHFAILED ||
         rc == ZSESSIONMOVED;
}

std::string last_client_error();

[[noreturn]] void fail(int rc, const std::string& what) {
  std::string msg = "ZooKeeper " + what + ": " + zerror(rc) + " (" + std::to_string(rc) + ")";
  if (is_session_gone(rc)) throw session_gone(msg);
  if (is_connection_loss(rc)) {
    auto detail = last_client_error();
    throw connection_error(detail.empty() ? msg : msg + "; client: " + detail);
  }
  if (rc == ZBADARGUMENTS || rc == ZINVALIDACL) throw config_error(msg);
  throw backend_error(msg, std::to_string(rc));
}

// The C client logs through this callback (per handle): errors are kept for messages, the rest
// dropped, so an application's stderr is not flooded by reconnect chatter.
std::mutex log_m;
std::string log_last_error;
void log_callback(const char* message) {
  if (!message || !std::strstr(message, "ZOO_ERROR")) return;
  std::lock_guard g(log_m);
  log_last_error = message;
  while (!log_last_error.empty() &&
         (log_last_error.back() == '\n' || log_last_error.back() == '\r'))
    log_last_error.pop_back();
}
std::string last_client_error() {
  std::lock_guard g(log_m);
  return log_last_error;
}

// ---- names ----

bool plain_char(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == ':' || c == '@' || c == '+' || c == '=' || c == ',' || c == '~' ||
         c == '-';
}

// "." and ".." are not valid znode names: a name of only dots is escaped entirely.
std::string escape(std::string_view s) {
  bool all_dots = !s.empty() && s.find_first_not_of('.') == std::string_view::npos;
  if (all_dots) return percent_encode(s, [](unsigned char) { return false; });
  return percent_encode(s, plain_char);
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
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

// One queue entry: "n-<escaped owner>-<10-digit sequence>".
struct queue_node {
  std::string znode;  // child name
  std::string owner;
  std::int64_t seq = 0;
};

std::optional<queue_node> parse_node(std::string_view child) {
  if (child.size() < 2 + 1 + 10 || child.substr(0, 2) != "n-") return std::nullopt;
  std::string_view seq = child.substr(child.size() - 10);
  if (child[child.size() - 11] != '-') return std::nullopt;
  std::int64_t v = 0;
  for (char c : seq) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  auto owner = unescape(child.substr(2, child.size() - 13));
  if (!owner) return std::nullopt;
  return queue_node{std::string(child), std::move(*owner), v};
}

// ---- sessions ----

struct counters {
  std::atomic<std::uint64_t> sessions{0}, expirations{0}, watch_events{0}, woken_not_first{0},
      waiting{0}, nodes_created{0}, lost_replies_found{0}, connection_losses{0};
};

// A thread blocked on a watch; registered in its session under an id that is the watch context.
struct waiter {
  std::condition_variable cv;
  bool fired = false;
};

// One ZooKeeper handle. Owned by the backend (callers keep a copy while they use it); closed by
// the destructor, which joins the client's threads, so callbacks never see a dead session.
struct session {
  zhandle_t* zh = nullptr;
  std::uint64_t epoch = 0;
  counters* stats = nullptr;
  std::mutex m;
  std::condition_variable cv;  // state changes
  bool connected = false;
  bool expired = false;  // expired, closed by the server, or auth failed
  bool auth_failed = false;
  steady_time disconnected_since = clock::now();
  std::uint64_t state_gen = 0;
  std::map<std::uintptr_t, waiter*> waiters;
  std::uintptr_t next_waiter = 1;

  session() = default;
  session(const session&) = delete;
  session& operator=(const session&) = delete;
  ~session() {
    if (zh) zookeeper_close(zh);
  }

  bool gone() {
    std::lock_guard g(m);
    return expired || auth_failed;
  }
  // Waits until connected (true) or gone/until (false).
  bool wait_connected(steady_time until) {
    std::unique_lock lk(m);
    cv.wait_until(lk, until, [&] { return connected || expired || auth_failed; });
    return connected;
  }
  milliseconds timeout() const { return milliseconds(zh ? zoo_recv_timeout(zh) : 0); }
};

// Global watcher of a handle: session state only.
void session_watcher(zhandle_t*, int type, int state, const char*, void* ctx) {
  if (type != ZOO_SESSION_EVENT || !ctx) return;
  auto* s = static_cast<session*>(ctx);
  std::lock_guard g(s->m);
  if (state == ZOO_CONNECTED_STATE) {
    s->connected = true;
  } else if (state == ZOO_EXPIRED_SESSION_STATE) {
    if (!s->expired && s->stats) s->stats->expirations++;
    s->expired = true;
    s->connected = false;
  } else if (state == ZOO_AUTH_FAILED_STATE) {
    s->auth_failed = true;
    s->connected = false;
  } else {
    if (s->connected) s->disconnected_since = clock::now();
    s->connected = false;
  }
  ++s->state_gen;
  s->cv.notify_all();
  for (auto& [id, w] : s->waiters) w->cv.notify_all();
}

// Watcher of a predecessor node (or of a parent's children for wait_for_change): wakes exactly
// the waiter that set it.
void node_watcher(zhandle_t* zh, int type, int, const char*, void* ctx) {
  if (type == ZOO_SESSION_EVENT) return;  // the session watcher handles those
  auto* s = static_cast<session*>(const_cast<void*>(zoo_get_context(zh)));
  if (!s) return;
  std::lock_guard g(s->m);
  auto it = s->waiters.find(reinterpret_cast<std::uintptr_t>(ctx));
  if (it == s->waiters.end()) return;  // its waiter gave up meanwhile
  if (s->stats) s->stats->watch_events++;
  it->second->fired = true;
  it->second->cv.notify_all();
}

// RAII registration of a waiter in a session.
class waiter_slot {
 public:
  explicit waiter_slot(session& s) : s_(s) {
    std::lock_guard g(s_.m);
    id_ = s_.next_waiter++;
    s_.waiters[id_] = &w_;
  }
  ~waiter_slot() {
    std::lock_guard g(s_.m);
    s_.waiters.erase(id_);
  }
  waiter_slot(const waiter_slot&) = delete;
  waiter_slot& operator=(const waiter_slot&) = delete;
  void* context() const { return reinterpret_cast<void*>(id_); }
  // Waits until the watch fired, the session state changed, or `until`; true when it fired.
  bool wait(steady_time until) {
    std::unique_lock lk(s_.m);
    auto gen = s_.state_gen;
    w_.cv.wait_until(lk, until, [&] { return w_.fired || s_.state_gen != gen; });
    return w_.fired;
  }

 private:
  session& s_;
  waiter w_;
  std::uintptr_t id_ = 0;
};

// A node this backend object created and still considers its own.
struct node_record {
  std::string name;    // lock name
  std::string owner;   // owner token
  std::string parent;  // <root>/locks/<escaped name>
  std::string path;    // parent + "/" + znode
  std::string znode;
  std::uint64_t epoch = 0;  // session that created it
  std::int64_t czxid = 0;
};

class zk_backend;
zk_backend* as_zk(const backend& b);

class zk_backend final : public backend {
 public:
  explicit zk_backend(options o) : opts_(std::move(o)) {
    if (opts_.hosts.empty()) throw config_error("ZooKeeper hosts must not be empty");
    if (opts_.session_timeout.count() <= 0)
      throw config_error("ZooKeeper session_timeout must be > 0");
    if (opts_.connect_timeout.count() < 0)
      throw config_error("ZooKeeper connect_timeout must be >= 0");
    if (opts_.creator_acl && opts_.user.empty())
      throw config_error("ZooKeeper acl=creator needs a user:password in the URL");
    if (!opts_.user.empty() && opts_.user.find(':') != std::string::npos)
      throw config_error("ZooKeeper digest user must not contain ':'");
    root_ = normalize_root(opts_.root);
    locks_ = (root_ == "/" ? std::string() : root_) + "/locks";
    std::lock_guard g(sm_);
    session_ = open_session();
  }

  ~zk_backend() override {
    std::lock_guard g(sm_);
    session_.reset();
  }

  // ---- the seam ----

  std::optional<lease_info> try_acquire(const lock_request& req) override {
    check_request(req);
    return with_session([&](const std::shared_ptr<session>& s) -> std::optional<lease_info> {
      auto until = op_deadline(*s);
      if (auto rec = record_of(req.owner, s->epoch)) {  // a retried attempt of this owner
        auto q = queue(*s, rec->parent, until);
        if (!q.empty() && q.front().znode == rec->znode) return lease_of(*rec);
        if (std::none_of(q.begin(), q.end(), [&](auto& n) { return n.znode == rec->znode; })) {
          forget(req.owner);
        } else {
          remove_node(*s, *rec, until);
          return std::nullopt;
        }
      }
      const std::string parent = parent_of(req.name);
      if (!queue(*s, parent, until).empty()) return std::nullopt;  // busy: one read, no write
      std::optional<std::vector<queue_node>> listing;
      node_record rec = create_node(*s, req, until, &listing);
      auto q = listing ? std::move(*listing) : queue(*s, parent, until);
      if (!q.empty() && q.front().znode == rec.znode) return lease_of(rec);
      remove_node(*s, rec, until);
      return std::nullopt;
    });
  }

  std::optional<lease_info> acquire(const lock_request& req, steady_time deadline,
                                    const wait_policy& policy) override {
    check_request(req);
    for (;;) {
      try {
        auto s = live_session();
        if (auto got = wait_in_queue(s, req, deadline, policy)) return got;
        return std::nullopt;
      } catch (const session_gone&) {
        // Our node died with the session: queue again on a new one (at the back).
        forget(req.owner);
        if (clock::now() >= deadline) return std::nullopt;
      }
    }
  }

  bool renew(const lease_info& lease, milliseconds) override {
    auto rec = find_record(lease);
    if (!rec) return false;
    std::shared_ptr<session> s;
    {
      std::lock_guard g(sm_);
      s = session_;
    }
    if (!s || s->epoch != rec->epoch || s->gone()) {
      forget(lease.owner);
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
    Stat st{};
    int rc = zoo_exists(s->zh, rec->path.c_str(), 0, &st);
    if (rc == ZOK) return true;
    if (rc == ZNONODE) {
      forget(lease.owner);
      return false;
    }
    if (is_session_gone(rc)) {
      forget(lease.owner);
      return false;
    }
    if (is_connection_loss(rc)) {
      stats_.connection_losses++;
      if (suspended()) return false;
      throw connection_error("ZooKeeper connection lost while renewing '" + lease.name + "'");
    }
    fail(rc, "exists(" + rec->path + ")");
  }

  bool release(const lease_info& lease) override {
    auto rec = find_record(lease);
    try {
      return with_session([&](const std::shared_ptr<session>& s) -> bool {
        auto until = op_deadline(*s);
        if (rec) {
          forget(lease.owner);
          if (rec->epoch != s->epoch) return false;  // gone with its session
          return remove_node(*s, *rec, until);
        }
        // Not ours (another object or process, or a foreign token): look the owner up.
        if (lease.name.empty()) return false;
        const std::string parent = parent_of(lease.name);
        for (auto& n : queue(*s, parent, until)) {
          if (n.owner != lease.owner) continue;
          node_record r{lease.name, n.owner, parent, parent + "/" + n.znode, n.znode, s->epoch, 0};
          return remove_node(*s, r, until);
        }
        return false;
      });
    } catch (const session_gone&) {
      return false;  // the session that held it is gone, and with it the node
    }
  }

  void wait_for_change(std::string_view name, steady_time until) override {
    try {
      auto s = live_session();
      waiter_slot slot(*s);
      const std::string parent = parent_of(name);
      String_vector v{};
      int rc = zoo_wget_children(s->zh, parent.c_str(), node_watcher, slot.context(), &v);
      bool empty = true;
      if (rc == ZOK) {
        for (std::int32_t i = 0; i < v.count; ++i)
          if (parse_node(v.data[i])) empty = false;
        deallocate_String_vector(&v);
      }
      if (rc != ZOK || empty) return;  // free (or gone): let the caller try now
      slot.wait(until);
    } catch (const error&) {
      std::this_thread::sleep_until(std::min(until, clock::now() + milliseconds(50)));
    }
  }

  std::vector<lock_status> list(std::string_view prefix) override {
    return with_session([&](const std::shared_ptr<session>& s) {
      auto until = op_deadline(*s);
      std::vector<lock_status> out;
      for (const auto& child : children(*s, locks_, until)) {
        auto name = lock_name(child);
        if (!name || name->compare(0, prefix.size(), prefix) != 0 || name->size() < prefix.size())
          continue;
        const std::string parent = locks_ + "/" + child;
        auto q = queue(*s, parent, until);
        if (q.empty()) continue;
        const std::string path = parent + "/" + q.front().znode;
        std::vector<char> buf(4096);
        Stat st{};
        int len = static_cast<int>(buf.size());
        int rc = call(*s, until, [&] {
          len = static_cast<int>(buf.size());
          return zoo_get(s->zh, path.c_str(), 0, buf.data(), &len, &st);
        });
        if (rc == ZNONODE) continue;  // released meanwhile
        if (rc != ZOK) fail(rc, "get(" + path + ")");
        lock_status ls;
        ls.name = *name;
        ls.owner = q.front().owner;
        ls.fence = static_cast<std::uint64_t>(st.czxid);
        ls.acquired_at = format_utc_ms(st.ctime);
        ls.mode = "session";
        if (len > 0) ls.holder.assign(buf.data(), static_cast<std::size_t>(len));
        out.push_back(std::move(ls));
      }
      std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.name < b.name; });
      return out;
    });
  }

  bool force_release(std::string_view name) override {
    if (name.empty()) throw config_error("lock name must not be empty");
    return with_session([&](const std::shared_ptr<session>& s) {
      auto until = op_deadline(*s);
      const std::string parent = parent_of(name);
      auto q = queue(*s, parent, until);
      if (q.empty()) return false;
      node_record r{std::string(name), q.front().owner, parent, parent + "/" + q.front().znode,
                    q.front().znode,   s->epoch,        0};
      return remove_node(*s, r, until);
    });
  }

  capabilities caps() const noexcept override {
    capabilities c;
    c.fencing = true;
    c.fencing_safe = true;  // zxids rise across leader changes
    c.notify = true;
    c.fair = true;
    c.session_bound = true;
    c.list = true;
    c.force_release = true;
    c.sweep = false;
    c.cross_process = true;
    return c;
  }

  std::string describe() const override {
    std::string d = "zookeeper://";
    if (!opts_.user.empty()) d += opts_.user + ":***@";
    return d + opts_.hosts + root_ + " (session " + std::to_string(opts_.session_timeout.count()) +
           "ms)";
  }
  std::string kind() const override { return "zookeeper"; }

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

  session_credentials credentials() {
    auto s = live_session();
    const clientid_t* id = zoo_client_id(s->zh);
    if (!id) throw connection_error("ZooKeeper backend has no session");
    return session_credentials{id->client_id, std::string(id->passwd, sizeof id->passwd),
                               zoo_recv_timeout(s->zh)};
  }

 private:
  static std::string normalize_root(std::string r) {
    if (r.empty()) r = "/sqlock";
    if (r.front() != '/')
      throw config_error("ZooKeeper root must start with '/' (got '" + r + "')");
    while (r.size() > 1 && r.back() == '/') r.pop_back();
    std::size_t i = 1;
    while (r.size() > 1 && i <= r.size()) {
      auto j = r.find('/', i);
      if (j == std::string::npos) j = r.size();
      auto part = r.substr(i, j - i);
      if (part.empty() || part == "." || part == ".." || (i == 1 && part == "zookeeper"))
        throw config_error("ZooKeeper root '" + r + "' has an invalid component '" + part + "'");
      i = j + 1;
    }
    return r;
  }

  static void check_request(const lock_request& req) {
    if (req.name.empty()) throw config_error("lock name must not be empty");
    if (req.owner.empty()) throw config_error("owner token must not be empty");
  }

  std::string parent_of(std::string_view name) const { return locks_ + "/" + znode_name(name); }

  const ACL_vector* acl() const {
    return opts_.creator_acl ? &ZOO_CREATOR_ALL_ACL : &ZOO_OPEN_ACL_UNSAFE;
  }

  // A connected session, replacing an expired one. Throws connection_error.
  std::shared_ptr<session> live_session() {
    std::lock_guard g(sm_);
    if (session_ && !session_->gone()) return session_;
    session_.reset();  // the old handle closes once no call uses it any more
    session_ = open_session();
    return session_;
  }

  // Stops using session `s`: the next call opens a new session; the handle closes (ending the
  // session and its ephemeral nodes on the server) once no call uses it any more. Holds of `s`
  // then renew as lost.
  void retire(session& s) {
    std::lock_guard g(sm_);
    if (session_.get() == &s) session_.reset();
  }

  milliseconds connect_timeout() const {
    return opts_.connect_timeout.count() > 0 ? opts_.connect_timeout : opts_.session_timeout;
  }

  std::shared_ptr<session> open_session() {
    auto s = std::make_shared<session>();
    s->epoch = ++epoch_;
    s->stats = &stats_;
    errno = 0;
    s->zh = zookeeper_init2(opts_.hosts.c_str(), session_watcher,
                            static_cast<int>(opts_.session_timeout.count()), nullptr, s.get(), 0,
                            log_callback);
    if (!s->zh) {
      int e = errno;
      if (e == EINVAL)
        throw config_error("ZooKeeper hosts '" + opts_.hosts + "' are not valid host:port pairs");
      throw connection_error("ZooKeeper client could not start for '" + opts_.hosts +
                             "': " + std::strerror(e));
    }
    // By default the client re-resolves the host names every time it polls its socket: a
    // getaddrinfo() per loop (a netlink query each) that also holds a glibc lock a fork() in
    // another thread can inherit forever. Resolve at connect and on connection loss only.
    zoo_set_servers_resolution_delay(s->zh, -1);
    if (!s->wait_connected(clock::now() + connect_timeout())) {
      if (s->auth_failed) throw config_error("ZooKeeper authentication failed");
      auto detail = last_client_error();
      throw connection_error("no ZooKeeper session with " + opts_.hosts + " within " +
                             std::to_string(connect_timeout().count()) + "ms" +
                             (detail.empty() ? std::string() : "; client: " + detail));
    }
    if (!opts_.user.empty()) add_auth(*s);
    ensure_path(*s, locks_, clock::now() + connect_timeout());
    stats_.sessions++;
    return s;
  }

  struct auth_wait {
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    int rc = 0;
  };
  static void auth_done(int rc, const void* data) {
    auto* w = static_cast<auth_wait*>(const_cast<void*>(data));
    std::lock_guard g(w->m);
    w->done = true;
    w->rc = rc;
    w->cv.notify_all();
  }

  void add_auth(session& s) {
    const std::string cert = opts_.user + ":" + opts_.password;
    auto w = std::make_shared<auth_wait>();
    // The completion may run after a timeout below: keep its state alive until the session
    // closes (close joins the completion thread), hence the extra reference held by auth_keep_.
    auth_keep_.push_back(w);
    int rc = zoo_add_auth(s.zh, "digest", cert.data(), static_cast<int>(cert.size()), auth_done,
                          w.get());
    if (rc != ZOK) fail(rc, "add_auth(digest)");
    std::unique_lock lk(w->m);
    if (!w->cv.wait_until(lk, clock::now() + connect_timeout(), [&] { return w->done; }))
      throw connection_error("ZooKeeper did not answer the digest authentication");
    if (w->rc != ZOK) {
      if (w->rc == ZAUTHFAILED) throw config_error("ZooKeeper digest authentication failed");
      fail(w->rc, "add_auth(digest)");
    }
  }

  // Persistent nodes for every component of `path`.
  void ensure_path(session& s, const std::string& path, steady_time until) {
    std::size_t i = 1;
    while (i <= path.size()) {
      auto j = path.find('/', i);
      if (j == std::string::npos) j = path.size();
      const std::string part = path.substr(0, j);
      // exists() first: creating an existing node we may not write to fails with ZNOAUTH.
      Stat st{};
      int rc = call(s, until, [&] { return zoo_exists(s.zh, part.c_str(), 0, &st); });
      if (rc == ZNONODE) {
        rc = call(s, until, [&] {
          return zoo_create(s.zh, part.c_str(), nullptr, -1, acl(), ZOO_PERSISTENT, nullptr, 0);
        });
      }
      if (rc != ZOK && rc != ZNODEEXISTS) fail(rc, "create(" + part + ")");
      i = j + 1;
    }
  }

  steady_time op_deadline(session& s) const {
    auto t = s.timeout();
    if (t.count() <= 0) t = opts_.session_timeout;
    return clock::now() + t;
  }

  // Runs a call, retrying it after a connection loss once the session has reconnected (at most
  // until `until`). The call must be safe to repeat.
  template <class F>
  int call(session& s, steady_time until, F&& f) {
    for (;;) {
      int rc = f();
      if (!is_connection_loss(rc)) return rc;
      stats_.connection_losses++;
      if (clock::now() >= until) return rc;
      {
        std::unique_lock lk(s.m);
        if (s.connected) {  // the client has not noticed yet: give it a moment
          s.cv.wait_until(lk, std::min(until, clock::now() + milliseconds(20)));
          continue;
        }
      }
      if (!s.wait_connected(until)) return s.gone() ? ZSESSIONEXPIRED : rc;
    }
  }

  // Runs `f` on a live session; a session that turns out gone is replaced once.
  template <class F>
  std::invoke_result_t<F&, const std::shared_ptr<session>&> with_session(F&& f) {
    for (int attempt = 0;; ++attempt) {
      auto s = live_session();
      try {
        return f(s);
      } catch (const session_gone&) {
        if (attempt >= 1) throw;
      }
    }
  }

  std::vector<std::string> children(session& s, const std::string& path, steady_time until) {
    String_vector v{};
    int rc = call(s, until, [&] { return zoo_get_children(s.zh, path.c_str(), 0, &v); });
    if (rc == ZNONODE) return {};
    if (rc != ZOK) fail(rc, "get_children(" + path + ")");
    std::vector<std::string> out;
    out.reserve(static_cast<std::size_t>(v.count));
    for (std::int32_t i = 0; i < v.count; ++i) out.emplace_back(v.data[i]);
    deallocate_String_vector(&v);
    return out;
  }

  // The lock's queue, lowest sequence first.
  std::vector<queue_node> queue(session& s, const std::string& parent, steady_time until) {
    std::vector<queue_node> q;
    for (auto& c : children(s, parent, until))
      if (auto n = parse_node(c)) q.push_back(std::move(*n));
    std::sort(q.begin(), q.end(), [](auto& a, auto& b) { return a.seq < b.seq; });
    return q;
  }

  // Creates this owner's node, idempotently: a create whose reply was lost is looked up by the
  // owner token embedded in the node name instead of being repeated.
  // With `listing`, the first create is pipelined with a getChildren of the parent (a session's
  // requests are answered in order, so the listing includes the new node): one round-trip
  // instead of two. `listing` stays empty when that did not work out.
  node_record create_node(session& s, const lock_request& req, steady_time until,
                          std::optional<std::vector<queue_node>>* listing = nullptr) {
    node_record rec;
    rec.name = req.name;
    rec.owner = req.owner;
    rec.parent = parent_of(req.name);
    rec.epoch = s.epoch;
    const std::string prefix = rec.parent + "/n-" + escape(req.owner) + "-";
    std::vector<char> buf(prefix.size() + 32);
    for (int attempt = 0; attempt < 20; ++attempt) {
      Stat st{};
      std::string created;
      int rc = 0;
      if (attempt == 0 && listing) {
        rc = create_and_list(s, prefix, req.holder, rec.parent, created, st, *listing);
      } else {
        rc = zoo_create2(s.zh, prefix.c_str(), req.holder.data(),
                         static_cast<int>(req.holder.size()), acl(), ZOO_EPHEMERAL_SEQUENTIAL,
                         buf.data(), static_cast<int>(buf.size()), &st);
        if (rc == ZOK) created = buf.data();
      }
      if (rc == ZOK) {
        rec.path = created;
        rec.znode = rec.path.substr(rec.parent.size() + 1);
        rec.czxid = st.czxid;
        stats_.nodes_created++;
        remember(req.owner, rec);
        return rec;
      }
      if (rc == ZNONODE) {  // no parent (never made, or removed as an empty container)
        int prc = call(s, until, [&] {
          return zoo_create(s.zh, rec.parent.c_str(), nullptr, -1, acl(), ZOO_CONTAINER, nullptr,
                            0);
        });
        if (prc == ZNONODE)
          ensure_path(s, locks_, until);
        else if (prc != ZOK && prc != ZNODEEXISTS)
          fail(prc, "create(" + rec.parent + ")");
        continue;
      }
      if (is_connection_loss(rc)) {
        stats_.connection_losses++;
        if (!s.wait_connected(until))
          fail(s.gone() ? ZSESSIONEXPIRED : rc, "create(" + prefix + ")");
        // Did the create happen before the reply was lost?
        for (auto& n : queue(s, rec.parent, until)) {
          if (n.owner != req.owner) continue;
          rec.znode = n.znode;
          rec.path = rec.parent + "/" + n.znode;
          int erc = call(s, until, [&] { return zoo_exists(s.zh, rec.path.c_str(), 0, &st); });
          if (erc != ZOK) break;
          rec.czxid = st.czxid;
          stats_.lost_replies_found++;
          stats_.nodes_created++;
          remember(req.owner, rec);
          return rec;
        }
        continue;
      }
      fail(rc, "create(" + prefix + ")");
    }
    throw connection_error("ZooKeeper: could not create a node under " + rec.parent);
  }

  struct pipeline {
    std::mutex m;
    std::condition_variable cv;
    int pending = 0;
    int create_rc = ZOK;
    std::string path;
    Stat stat{};
    int list_rc = ZOK;
    std::vector<std::string> children;
  };
  static void created_cb(int rc, const char* value, const Stat* st, const void* data) {
    auto* p = static_cast<pipeline*>(const_cast<void*>(data));
    std::lock_guard g(p->m);
    p->create_rc = rc;
    if (rc == ZOK && value) p->path = value;
    if (rc == ZOK && st) p->stat = *st;
    if (--p->pending == 0) p->cv.notify_all();
  }
  static void listed_cb(int rc, const String_vector* v, const void* data) {
    auto* p = static_cast<pipeline*>(const_cast<void*>(data));
    std::lock_guard g(p->m);
    p->list_rc = rc;
    if (rc == ZOK && v)
      for (std::int32_t i = 0; i < v->count; ++i) p->children.emplace_back(v->data[i]);
    if (--p->pending == 0) p->cv.notify_all();
  }

  // Sends create + getChildren back to back and waits for both answers (the C client always
  // completes a request: with its answer, a connection loss, or at close). Returns the create's
  // code; `listing` is filled when both succeeded.
  int create_and_list(session& s, const std::string& prefix, const std::string& data,
                      const std::string& parent, std::string& created, Stat& st,
                      std::optional<std::vector<queue_node>>& listing) {
    pipeline p;
    p.pending = 2;
    int rc = zoo_acreate2(s.zh, prefix.c_str(), data.data(), static_cast<int>(data.size()), acl(),
                          ZOO_EPHEMERAL_SEQUENTIAL, created_cb, &p);
    if (rc != ZOK) return rc;  // not sent: nothing will call back
    int lrc = zoo_aget_children(s.zh, parent.c_str(), 0, listed_cb, &p);
    std::unique_lock lk(p.m);
    if (lrc != ZOK) {
      --p.pending;
      p.list_rc = lrc;
    }
    p.cv.wait(lk, [&] { return p.pending == 0; });
    if (p.create_rc == ZOK) {
      created = p.path;
      st = p.stat;
      if (p.list_rc == ZOK) {
        std::vector<queue_node> q;
        for (auto& c : p.children)
          if (auto n = parse_node(c)) q.push_back(std::move(*n));
        std::sort(q.begin(), q.end(), [](auto& a, auto& b) { return a.seq < b.seq; });
        listing = std::move(q);
      }
    }
    return p.create_rc;
  }

  // Deletes a node; true when this call deleted it. Retries through connection losses.
  bool remove_node(session& s, const node_record& rec, steady_time until) {
    forget_path(rec.path);
    int rc = call(s, until, [&] { return zoo_delete(s.zh, rec.path.c_str(), -1); });
    if (rc == ZOK) return true;
    if (rc == ZNONODE) return false;
    // Unknown outcome after retrying for a whole session timeout: a node left behind would
    // hold (or later win) the lock for nobody, so give up the session, which removes it.
    if (is_connection_loss(rc)) retire(s);
    fail(rc, "delete(" + rec.path + ")");
  }

  std::optional<lease_info> wait_in_queue(const std::shared_ptr<session>& sp,
                                          const lock_request& req, steady_time deadline,
                                          const wait_policy& policy) {
    session& s = *sp;
    std::optional<node_record> rec = record_of(req.owner, s.epoch);
    std::optional<std::vector<queue_node>> listing;
    if (!rec) rec = create_node(s, req, op_deadline(s), &listing);
    bool waited = false;
    for (;;) {
      auto until = std::max(deadline, op_deadline(s));
      auto q = listing ? std::move(*listing) : queue(s, rec->parent, until);
      listing.reset();
      auto me = std::find_if(q.begin(), q.end(), [&](auto& n) { return n.znode == rec->znode; });
      if (me == q.end()) {
        // Our node vanished (force_release of a waiter, or the session died): queue again.
        forget(req.owner);
        if (s.gone()) throw session_gone("ZooKeeper session expired while waiting");
        if (clock::now() >= deadline) return std::nullopt;
        rec = create_node(s, req, op_deadline(s));
        continue;
      }
      if (me == q.begin()) {
        auto l = lease_of(*rec);
        l.waited = waited;
        return l;
      }
      if (clock::now() >= deadline) break;
      waited = true;
      const std::string pred = rec->parent + "/" + std::prev(me)->znode;
      waiter_slot slot(s);
      Stat st{};
      int rc = call(s, until, [&] {
        return zoo_wexists(s.zh, pred.c_str(), node_watcher, slot.context(), &st);
      });
      if (rc == ZNONODE) continue;  // the predecessor left already: re-check
      if (rc != ZOK) fail(rc, "exists(" + pred + ")");
      stats_.waiting++;
      // The recheck interval only bounds how long a missed event could delay us.
      auto wake =
          std::min(deadline, clock::now() + std::max(policy.notify_recheck, milliseconds(30000)));
      bool fired = slot.wait(wake);
      stats_.waiting--;
      if (fired) {
        auto q2 = queue(s, rec->parent, until);
        if (!q2.empty() && q2.front().znode == rec->znode) {
          auto l = lease_of(*rec);
          l.waited = true;
          return l;
        }
        stats_.woken_not_first++;
        continue;
      }
    }
    // Deadline: leave the queue (a node left behind would later "hold" for nobody).
    try {
      remove_node(s, *rec, op_deadline(s));
    } catch (const session_gone&) {
      // The node went with the session.
    }
    forget(req.owner);
    return std::nullopt;
  }

  static lease_info lease_of(const node_record& rec) {
    lease_info l;
    l.name = rec.name;
    l.owner = rec.owner;
    l.fence = static_cast<std::uint64_t>(rec.czxid);
    l.state = std::make_shared<node_record>(rec);
    return l;
  }

  // ---- owner -> node records ----

  void remember(const std::string& owner, const node_record& rec) {
    std::lock_guard g(rm_);
    records_[owner] = rec;
  }
  void forget(const std::string& owner) {
    std::lock_guard g(rm_);
    records_.erase(owner);
  }
  void forget_path(const std::string& path) {
    std::lock_guard g(rm_);
    std::erase_if(records_, [&](auto& kv) { return kv.second.path == path; });
  }
  std::optional<node_record> record_of(const std::string& owner, std::uint64_t epoch) {
    std::lock_guard g(rm_);
    auto it = records_.find(owner);
    if (it == records_.end()) return std::nullopt;
    if (it->second.epoch != epoch) {
      records_.erase(it);
      return std::nullopt;
    }
    return it->second;
  }
  std::optional<node_record> find_record(const lease_info& lease) {
    std::lock_guard g(rm_);
    auto it = records_.find(lease.owner);
    if (it != records_.end()) return it->second;
    return std::nullopt;
  }

  options opts_;
  std::string root_;
  std::string locks_;
  counters stats_;
  std::mutex sm_;  // session_, epoch_, auth_keep_
  std::shared_ptr<session> session_;
  std::uint64_t epoch_ = 0;
  std::vector<std::shared_ptr<auth_wait>> auth_keep_;
  std::mutex rm_;
  std::map<std::string, node_record> records_;
};

zk_backend* as_zk(const backend& b) {
  auto* z = dynamic_cast<const zk_backend*>(&b);
  if (!z) throw usage_error("not a ZooKeeper backend: " + b.describe());
  return const_cast<zk_backend*>(z);
}

}  // namespace

std::string znode_name(std::string_view name) {
  return escape(name);
}

std::optional<std::string> lock_name(std::string_view znode) {
  if (znode.empty()) return std::nullopt;
  auto n = unescape(znode);
  if (!n || n->empty() || escape(*n) != znode) return std::nullopt;
  return n;
}

std::shared_ptr<backend> open(const options& opts) {
  return std::make_shared<zk_backend>(opts);
}

statistics stats(const backend& b) {
  return as_zk(b)->snapshot();
}

session_credentials current_session(backend& b) {
  return as_zk(b)->credentials();
}

}  // namespace zookeeper

namespace backends {
void register_zookeeper() {
  register_backend("zookeeper", [](const url& u) -> std::shared_ptr<backend> {
    u.check_params({"session_timeout", "connect_timeout", "acl"});
    if (u.hosts.empty())
      throw config_error("ZooKeeper URL needs hosts: zookeeper://h1:2181,h2:2181/root (got '" +
                         u.redacted() + "')");
    zookeeper::options o;
    o.hosts.clear();
    for (const auto& h : u.hosts) {
      if (h.host.empty()) throw config_error("ZooKeeper URL has an empty host: " + u.redacted());
      if (!o.hosts.empty()) o.hosts += ",";
      bool v6 = h.host.find(':') != std::string::npos;
      o.hosts += (v6 ? "[" + h.host + "]" : h.host) + ":" + std::to_string(h.port ? h.port : 2181);
    }
    o.root = u.path.empty() || u.path == "/" ? std::string("/sqlock") : u.path;
    if (auto t = u.duration_param("session_timeout")) {
      o.session_timeout = *t;
      if (o.session_timeout.count() <= 0)
        throw config_error("ZooKeeper session_timeout must be > 0");
    }
    if (auto t = u.duration_param("connect_timeout")) o.connect_timeout = *t;
    if (u.user) o.user = *u.user;
    if (u.password) o.password = *u.password;
    if (o.user.empty() != o.password.empty() && !o.user.empty())
      throw config_error("ZooKeeper digest authentication needs user:password@ (got only a user)");
    std::string acl = u.param("acl", o.user.empty() ? "open" : "creator");
    if (acl == "creator")
      o.creator_acl = true;
    else if (acl == "open")
      o.creator_acl = false;
    else
      throw config_error("ZooKeeper acl must be open or creator (got '" + acl + "')");
    return zookeeper::open(o);
  });
}
}  // namespace backends

}  // namespace sqlock
