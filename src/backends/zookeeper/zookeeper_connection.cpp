// A ZooKeeper session: error mapping, connection state, watches, and requests bounded by the
// caller's deadline (see zookeeper_connection.hpp).
#include "zookeeper_connection.hpp"
#include "zookeeper_janitors.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

namespace sqlock::zookeeper::detail {

bool is_connection_loss(int rc) {
  return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT || rc == deadline_passed;
}

bool is_session_gone(int rc) {
  return rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE || rc == ZCLOSING || rc == ZSESSIONMOVED;
}

void fail(int rc, const std::string& what) {
  if (rc == deadline_passed)
    throw connection_error("ZooKeeper " + what + ": no answer by the deadline");
  std::string msg = "ZooKeeper " + what + ": " + zerror(rc) + " (" + std::to_string(rc) + ")";
  if (rc == ZAUTHFAILED || rc == ZNOAUTH) throw auth_error(msg);
  if (is_session_gone(rc)) throw session_gone(msg);
  if (is_connection_loss(rc)) {
    auto detail = last_client_error();
    throw connection_error(detail.empty() ? msg : msg + "; client: " + detail);
  }
  if (rc == ZBADARGUMENTS || rc == ZINVALIDACL) throw config_error(msg);
  throw backend_error(msg, std::to_string(rc));
}

namespace {
std::mutex log_m;
std::string log_last_error;
}  // namespace

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

// ---- session state ----

session::~session() {
  if (zh) zookeeper_close(zh);
}

bool session::gone() {
  std::lock_guard g(m);
  return expired || auth_failed || closing;
}

namespace {
// Wakes every wait of `s` (its lock held): blocked threads at once, armed wake-ups into `out`,
// to be called once the lock is let go.
void wake_all(session& s, std::vector<std::function<void()>>& out) {
  for (auto& [id, w] : s.waiters) {
    w->cv.notify_all();
    if (w->wake) out.push_back(std::exchange(w->wake, nullptr));
  }
}
}  // namespace

void session::begin_close() {
  std::vector<std::function<void()>> wakes;
  {
    std::lock_guard g(m);
    closing = true;
    ++state_gen;
    wake_all(*this, wakes);
  }
  cv.notify_all();
  for (auto& wake : wakes) wake();
}

bool session::wait_connected(steady_time until) {
  std::unique_lock lk(m);
  cv.wait_until(lk, until, [&] { return connected || expired || auth_failed || closing; });
  return connected && !closing;
}

milliseconds session::timeout() const {
  return milliseconds(zh ? zoo_recv_timeout(zh) : 0);
}

void session_watcher(zhandle_t*, int type, int state, const char*, void* ctx) {
  if (type != ZOO_SESSION_EVENT || !ctx) return;
  auto* s = static_cast<session*>(ctx);
  bool now_gone = false;
  std::vector<std::function<void()>> wakes;
  {
    std::lock_guard g(s->m);
    bool was_gone = s->expired || s->auth_failed;
    if (state == ZOO_CONNECTED_STATE) {
      s->connected = true;
      if (!s->ever_connected && s->stats) s->stats->sessions++;
      s->ever_connected = true;
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
    now_gone = !was_gone && (s->expired || s->auth_failed);
    ++s->state_gen;
    wake_all(*s, wakes);
  }
  s->cv.notify_all();
  for (auto& wake : wakes) wake();
  if (now_gone && s->on_gone) s->on_gone(s->epoch);
}

void node_watcher(zhandle_t* zh, int type, int, const char*, void* ctx) {
  if (type == ZOO_SESSION_EVENT) return;  // the session watcher handles those
  auto* s = static_cast<session*>(const_cast<void*>(zoo_get_context(zh)));
  if (!s) return;
  std::function<void()> wake;
  {
    std::lock_guard g(s->m);
    auto it = s->waiters.find(reinterpret_cast<std::uintptr_t>(ctx));
    if (it == s->waiters.end()) return;  // its waiter gave up meanwhile
    if (s->stats) s->stats->watch_events++;
    it->second->fired = true;
    it->second->deleted = type == ZOO_DELETED_EVENT;
    it->second->cv.notify_all();
    wake = std::exchange(it->second->wake, nullptr);
  }
  if (wake) wake();  // an asynchronous request's next step (cheap, never blocks)
}

waiter_slot::waiter_slot(session& s) : s_(s) {
  std::lock_guard g(s_.m);
  id_ = s_.next_waiter++;
  gen_ = s_.state_gen;
  s_.waiters[id_] = &w_;
}

waiter_slot::~waiter_slot() {
  std::lock_guard g(s_.m);
  s_.waiters.erase(id_);
}

bool waiter_slot::wait(steady_time until, const std::stop_token& stop) {
  std::unique_lock lk(s_.m);
  auto gen = s_.state_gen;
  w_.cv.wait_until(lk, stop, until, [&] { return w_.fired || s_.state_gen != gen || s_.closing; });
  return w_.fired;
}

bool waiter_slot::deleted() {
  std::lock_guard g(s_.m);
  return w_.fired && w_.deleted;
}

bool waiter_slot::settled_locked() const {
  return w_.fired || s_.state_gen != gen_ || s_.closing;
}

bool waiter_slot::settled() {
  std::lock_guard g(s_.m);
  return settled_locked();
}

bool waiter_slot::fired() {
  std::lock_guard g(s_.m);
  return w_.fired;
}

bool waiter_slot::arm(std::function<void()> wake) {
  std::lock_guard g(s_.m);
  if (settled_locked()) return true;
  w_.wake = std::move(wake);
  return false;
}

void waiter_slot::disarm() noexcept {
  std::function<void()> dropped;  // destroyed after the lock is let go
  std::lock_guard g(s_.m);
  dropped = std::exchange(w_.wake, nullptr);
}

// ---- requests ----

// Named (not anonymous): auth_state holds a reply, and a unity build compiles this file as a
// header of another, where a field of an anonymous type is an error.
namespace replies {

// The answer to one asynchronous request. The completion owns a reference (a heap-allocated
// shared_ptr passed as the request's data), so a caller that gives up at its deadline leaves
// the state alive for the answer; `after` then runs on the completion thread.
struct reply {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  bool abandoned = false;
  int rc = ZOK;
  std::string value;
  Stat stat{};
  std::vector<std::string> children;
  std::function<void(reply&)> after;  // what to do with an answer nobody waits for any more
};
using reply_ptr = std::shared_ptr<reply>;

reply_ptr redeem(const void* data) {
  std::unique_ptr<reply_ptr> p(static_cast<reply_ptr*>(const_cast<void*>(data)));
  return std::move(*p);
}

void finish(reply& r) {
  std::function<void(reply&)> after;
  {
    std::lock_guard g(r.m);
    r.done = true;
    if (r.abandoned) after = std::move(r.after);
  }
  r.cv.notify_all();
  if (after) after(r);
}

void void_cb(int rc, const void* data) {
  auto r = redeem(data);
  {
    std::lock_guard g(r->m);
    r->rc = rc;
  }
  finish(*r);
}

void stat_cb(int rc, const Stat* st, const void* data) {
  auto r = redeem(data);
  {
    std::lock_guard g(r->m);
    r->rc = rc;
    if (rc == ZOK && st) r->stat = *st;
  }
  finish(*r);
}

void strings_cb(int rc, const String_vector* v, const void* data) {
  auto r = redeem(data);
  {
    std::lock_guard g(r->m);
    r->rc = rc;
    if (rc == ZOK && v)
      for (std::int32_t i = 0; i < v->count; ++i) r->children.emplace_back(v->data[i]);
  }
  finish(*r);
}

void data_cb(int rc, const char* value, int len, const Stat* st, const void* data) {
  auto r = redeem(data);
  {
    std::lock_guard g(r->m);
    r->rc = rc;
    if (rc == ZOK && value && len > 0) r->value.assign(value, static_cast<std::size_t>(len));
    if (rc == ZOK && st) r->stat = *st;
  }
  finish(*r);
}

void string_stat_cb(int rc, const char* value, const Stat* st, const void* data) {
  auto r = redeem(data);
  {
    std::lock_guard g(r->m);
    r->rc = rc;
    if (rc == ZOK && value) r->value = value;
    if (rc == ZOK && st) r->stat = *st;
  }
  finish(*r);
}

// Sends one request: `send(data)` returns the client's code; when it did not send, nothing
// will complete, so the reference handed over is taken back. Nothing is sent on a session
// being closed.
template <class F>
int send(session& s, const reply_ptr& r, F&& f) {
  if (s.closing) return ZCLOSING;
  auto* ticket = new reply_ptr(r);
  int rc = f(static_cast<void*>(ticket));
  if (rc != ZOK) delete ticket;
  return rc;
}

// Waits for the answer until `until` (deadline_passed after, the request abandoned) or until
// the session is being closed (ZCLOSING), which is looked at every 50 ms.
int await(session& s, reply& r, steady_time until) {
  std::unique_lock lk(r.m);
  for (;;) {
    auto slice = std::min(until, clock::now() + milliseconds(50));
    if (r.cv.wait_until(lk, slice, [&] { return r.done; })) return r.rc;
    if (clock::now() < until && !s.closing) continue;
    r.abandoned = true;
    return s.closing ? ZCLOSING : deadline_passed;
  }
}

// What an abandoned create leaves: its node when it was made, or (outcome unknown) any node of
// the owner under the parent.
std::function<void(reply&)> undo_create(zhandle_t* zh, const std::string& path,
                                        const std::string& owner_prefix) {
  return [zh, parent = path.substr(0, path.rfind('/')), owner_prefix](reply& r) {
    if (r.rc == ZOK)
      remove_later(zh, r.value);
    else if (is_connection_loss(r.rc) && !owner_prefix.empty())
      purge_later(zh, parent, owner_prefix);
  };
}

}  // namespace replies
using namespace replies;

int exists(session& s, const std::string& path, steady_time until, Stat* st, void* watch_ctx) {
  auto r = std::make_shared<reply>();
  int rc = send(s, r, [&](void* t) {
    return watch_ctx ? zoo_awexists(s.zh, path.c_str(), node_watcher, watch_ctx, stat_cb, t)
                     : zoo_aexists(s.zh, path.c_str(), 0, stat_cb, t);
  });
  if (rc != ZOK) return rc;
  rc = await(s, *r, until);
  if (rc == ZOK && st) *st = r->stat;
  return rc;
}

int get_children(session& s, const std::string& path, steady_time until,
                 std::vector<std::string>& out, void* watch_ctx) {
  auto r = std::make_shared<reply>();
  int rc = send(s, r, [&](void* t) {
    return watch_ctx
               ? zoo_awget_children(s.zh, path.c_str(), node_watcher, watch_ctx, strings_cb, t)
               : zoo_aget_children(s.zh, path.c_str(), 0, strings_cb, t);
  });
  if (rc != ZOK) return rc;
  rc = await(s, *r, until);
  if (rc == ZOK) out = std::move(r->children);
  return rc;
}

int get_data(session& s, const std::string& path, steady_time until, std::string& data, Stat& st) {
  auto r = std::make_shared<reply>();
  int rc = send(s, r, [&](void* t) { return zoo_aget(s.zh, path.c_str(), 0, data_cb, t); });
  if (rc != ZOK) return rc;
  rc = await(s, *r, until);
  if (rc == ZOK) {
    data = std::move(r->value);
    st = r->stat;
  }
  return rc;
}

int create(session& s, const std::string& path, const std::string& data, const ACL_vector* acl,
           int flags, steady_time until, std::string& created, Stat& st,
           const std::string& owner_prefix) {
  auto r = std::make_shared<reply>();
  if (flags & ZOO_EPHEMERAL) r->after = undo_create(s.zh, path, owner_prefix);
  int rc = send(s, r, [&](void* t) {
    return zoo_acreate2(s.zh, path.c_str(), data.data(), static_cast<int>(data.size()), acl, flags,
                        string_stat_cb, t);
  });
  if (rc != ZOK) return rc;
  rc = await(s, *r, until);
  if (rc == ZOK) {
    created = r->value;
    st = r->stat;
  }
  return rc;
}

int create_and_list(session& s, const std::string& path, const std::string& data,
                    const ACL_vector* acl, steady_time until, std::string& created, Stat& st,
                    const std::string& owner_prefix, std::vector<std::string>& children,
                    bool& listed, int parent_flags) {
  listed = false;
  const std::string parent = path.substr(0, path.rfind('/'));
  reply_ptr p;
  if (parent_flags >= 0) {
    p = std::make_shared<reply>();
    int prc = send(s, p, [&](void* t) {
      return zoo_acreate2(s.zh, parent.c_str(), "", 0, acl, parent_flags, string_stat_cb, t);
    });
    if (prc != ZOK) return prc;
  }
  auto c = std::make_shared<reply>();
  c->after = undo_create(s.zh, path, owner_prefix);
  int rc = send(s, c, [&](void* t) {
    return zoo_acreate2(s.zh, path.c_str(), data.data(), static_cast<int>(data.size()), acl,
                        ZOO_EPHEMERAL_SEQUENTIAL, string_stat_cb, t);
  });
  if (rc != ZOK) return rc;
  auto l = std::make_shared<reply>();
  int lrc = send(
      s, l, [&](void* t) { return zoo_aget_children(s.zh, parent.c_str(), 0, strings_cb, t); });
  if (p) {
    int prc = await(s, *p, until);
    if (prc != ZOK && prc != ZNODEEXISTS && !is_connection_loss(prc)) {
      // Refused (no grandparent, no right): the node's create fails too, or, if someone made
      // the parent meanwhile, the node it made is deleted. A connection loss is the node
      // create's to report (its lost-reply recovery may find the node).
      std::lock_guard g(c->m);
      if (!c->done) {
        c->abandoned = true;
        return prc;
      }
      if (c->rc == ZOK) remove_later(s.zh, c->value);
      return prc;
    }
  }
  rc = await(s, *c, until);
  if (rc != ZOK) return rc;
  created = c->value;
  st = c->stat;
  if (lrc == ZOK && await(s, *l, until) == ZOK) {
    children = std::move(l->children);
    listed = true;
  }
  return rc;
}

void remove_then(session& s, const std::string& path, std::function<void()> done) noexcept {
  remove_later(s.zh, path, std::move(done));
}

void remove_later(session& s, const std::string& path) {
  remove_later(s.zh, path);
}

void purge_later(session& s, const std::string& parent, const std::string& prefix) {
  purge_later(s.zh, parent, prefix);
}

int remove(session& s, const std::string& path, steady_time until) {
  auto r = std::make_shared<reply>();
  r->after = [zh = s.zh, path](reply& rr) {
    if (is_connection_loss(rr.rc)) remove_later(zh, path);
  };
  int rc = send(s, r, [&](void* t) { return zoo_adelete(s.zh, path.c_str(), -1, void_cb, t); });
  if (rc != ZOK) return rc;
  return await(s, *r, until);
}

struct auth_state {
  reply_ptr r = std::make_shared<reply>();
};

std::shared_ptr<auth_state> add_auth(session& s, const std::string& cert) {
  auto a = std::make_shared<auth_state>();
  int rc = send(s, a->r, [&](void* t) {
    return zoo_add_auth(s.zh, "digest", cert.data(), static_cast<int>(cert.size()), void_cb, t);
  });
  if (rc != ZOK) fail(rc, "add_auth(digest)");
  return a;
}

int wait_auth(session& s, steady_time until) {
  return await(s, *s.auth->r, until);
}

int call(session& s, steady_time until, const std::function<int()>& f) {
  for (;;) {
    int rc = f();
    if (!is_connection_loss(rc) || clock::now() >= until) return rc;
    if (s.stats) s.stats->connection_losses++;
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

}  // namespace sqlock::zookeeper::detail
