// One ZooKeeper session of the backend: the C client's handle, its connection state as the
// session watcher reports it, the threads blocked on watches, and every request the backend
// sends, each bounded by the caller's deadline. Requests are sent asynchronously and their
// completions awaited with a timeout, so a frozen or unreachable server never holds a caller past
// its deadline; a request given up keeps its completion state alive until the client answers it,
// and the janitor functions finish what it leaves behind (a node created or a delete pending for
// nobody). All ZooKeeper return codes are mapped to sqlock errors here (fail()). Internal.
#pragma once

#include <zookeeper/zookeeper.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sqlock/backend.hpp"
#include "sqlock/errors.hpp"

namespace sqlock::zookeeper::detail {

using clock = std::chrono::steady_clock;

/// The session a call ran on is gone (expired, closed, auth failed): callers that can start
/// over on a new session catch it; everyone else sees a connection_error.
class session_gone : public connection_error {
 public:
  using connection_error::connection_error;
};

/// The code a request gets when the caller's deadline came before its answer (not a ZooKeeper
/// code: the client's own ZOPERATIONTIMEOUT means the connection was given up).
inline constexpr int deadline_passed = -999;

/// The outcome of the request is unknown: the connection was lost or timed out, or the
/// caller's deadline came first (deadline_passed).
bool is_connection_loss(int rc);
/// The session is unusable: expired, closing, moved, authentication failed.
bool is_session_gone(int rc);
/// Throws the sqlock error for ZooKeeper code `rc` of operation `what` (never a secret).
[[noreturn]] void fail(int rc, const std::string& what);

/// The C client's log callback: ZOO_ERROR lines are kept for messages, the rest dropped.
void log_callback(const char* message);
/// The last ZOO_ERROR line of the C client ("" when none).
std::string last_client_error();

/// Counters of one backend object (see zookeeper::statistics).
struct counters {
  std::atomic<std::uint64_t> sessions{0}, expirations{0}, watch_events{0}, woken_not_first{0},
      waiting{0}, nodes_created{0}, lost_replies_found{0}, connection_losses{0};
};

struct auth_state;

/// A wait on a watch, registered in its session under an id (the watch context): a thread
/// blocked on `cv`, or an asynchronous request's one-shot `wake` (acquisition::arm).
struct waiter {
  std::condition_variable_any cv;  // also ends on the waiting caller's stop
  std::function<void()> wake;      // taken and called (outside the session's lock) by any event
  bool fired = false;
  bool deleted = false;  // the watch fired because its node was deleted
};

/// One ZooKeeper handle. Shared by the calls using it; the destructor closes it (which ends the
/// session on the server at once, deleting its ephemeral nodes, and joins the client's threads).
struct session {
  zhandle_t* zh = nullptr;    ///< the C client's handle
  std::uint64_t epoch = 0;    ///< which session of the backend (1, 2, ... after expiries)
  counters* stats = nullptr;  ///< the backend's counters
  /// Called (on the client's completion thread) once when the session expires or auth fails.
  std::function<void(std::uint64_t epoch)> on_gone;
  std::mutex m;                      ///< guards the state below (not `closing`, `ready`, `auth`)
  std::condition_variable cv;        ///< state changes
  bool connected = false;            ///< connected to a server now
  bool ever_connected = false;       ///< was connected once (counted in stats->sessions)
  bool expired = false;              ///< expired or closed by the server
  bool auth_failed = false;          ///< the server refused the authentication
  std::atomic<bool> closing{false};  ///< being closed: waits end, nothing more is sent
  bool ready = false;                ///< authenticated, base path made (guarded by setup_m)
  std::timed_mutex setup_m;          ///< one set-up at a time, waited for until a deadline
  std::shared_ptr<auth_state> auth;  ///< the digest authentication's answer (null = none)
  steady_time disconnected_since = clock::now();  ///< when the connection was last lost
  std::uint64_t state_gen = 0;                    ///< counts state changes (wakes waiters)
  std::map<std::uintptr_t, waiter*> waiters;      ///< waits on a watch, by id
  std::uintptr_t next_waiter = 1;                 ///< the next waiter id

  session() = default;
  session(const session&) = delete;
  session& operator=(const session&) = delete;
  ~session();

  /// Expired, refused or closing: no call on it can succeed any more.
  bool gone();
  /// Ends every wait on the session (ZCLOSING) and stops new requests; the destructor closes.
  void begin_close();
  /// Waits until connected (true) or gone/`until` (false).
  bool wait_connected(steady_time until);
  /// The negotiated session timeout (0 before the first connection).
  milliseconds timeout() const;
};

/// The session watcher (context = the session): state changes only.
void session_watcher(zhandle_t*, int type, int state, const char*, void* ctx);
/// The watcher of a predecessor node: wakes exactly the waiter whose id is the context.
void node_watcher(zhandle_t* zh, int type, int, const char*, void* ctx);

/// RAII registration of a waiter in a session.
class waiter_slot {
 public:
  explicit waiter_slot(session& s);
  ~waiter_slot();
  waiter_slot(const waiter_slot&) = delete;
  waiter_slot& operator=(const waiter_slot&) = delete;
  /// The watch context that wakes this slot.
  void* context() const { return reinterpret_cast<void*>(id_); }
  /// Waits until the watch fired, the session state changed, `until` or `stop`; true when it
  /// fired.
  bool wait(steady_time until, const std::stop_token& stop);
  /// The watch fired because its node was deleted (not changed, nor a watch removed).
  bool deleted();
  /// The watch fired, or the session's state changed (or it began to close) since the slot was
  /// made: the queue is to be read again.
  bool settled();
  /// The watch fired.
  bool fired();
  /// The non-blocking form of wait() (acquisition::arm): true when settled() already;
  /// otherwise `wake` is called once, on the client's thread, when the watch fires or the
  /// session's state changes.
  bool arm(std::function<void()> wake);
  /// Drops the wake-up of arm() if it was not called.
  void disarm() noexcept;

 private:
  // settled(), with the session's lock held.
  bool settled_locked() const;

  session& s_;
  waiter w_;
  std::uintptr_t id_ = 0;
  std::uint64_t gen_ = 0;  // the session's state_gen when the slot was made
};

// ---- requests, each bounded by `until` (deadline_passed when it came first) ----

/// exists(path), with a predecessor watch when `watch_ctx` is not null.
int exists(session& s, const std::string& path, steady_time until, Stat* st = nullptr,
           void* watch_ctx = nullptr);
/// getChildren(path) into `out`, with a child watch when `watch_ctx` is not null.
int get_children(session& s, const std::string& path, steady_time until,
                 std::vector<std::string>& out, void* watch_ctx = nullptr);
/// getData(path) into `data` and `st`.
int get_data(session& s, const std::string& path, steady_time until, std::string& data, Stat& st);
/// create(path) into `created` and `st`. A create given up at `until` is undone when its reply
/// comes (the node deleted); one whose outcome stays unknown purges nodes of `owner_prefix`
/// (a child-name prefix) under the parent, so nothing it made holds a lock for nobody.
int create(session& s, const std::string& path, const std::string& data, const ACL_vector* acl,
           int flags, steady_time until, std::string& created, Stat& st,
           const std::string& owner_prefix = {});
/// The same create followed at once by getChildren(parent) (answered in order: the listing
/// includes the new node). `children` is filled only when both succeeded. With
/// `parent_flags` >= 0, create(parent, parent_flags) goes out first in the same round trip (a
/// parent the server removed once empty): its code is returned when it is neither ZOK nor
/// ZNODEEXISTS.
int create_and_list(session& s, const std::string& path, const std::string& data,
                    const ACL_vector* acl, steady_time until, std::string& created, Stat& st,
                    const std::string& owner_prefix, std::vector<std::string>& children,
                    bool& listed, int parent_flags = -1);
/// delete(path). A delete given up at `until` is finished in the background.
int remove(session& s, const std::string& path, steady_time until);
/// Deletes `path` in the background, riding out connection losses (a release whose outcome
/// was unknown: the node must not hold for nobody while the session lives).
void remove_later(session& s, const std::string& path);
/// remove_later(), then `done` once the delete was answered or given up (on the session's
/// completion thread, or on this one when it could not be sent).
void remove_then(session& s, const std::string& path, std::function<void()> done) noexcept;
/// Deletes, in the background, every child of `parent` whose name starts with `prefix` (the
/// nodes of one owner token: a create whose outcome stayed unknown may have made one).
void purge_later(session& s, const std::string& parent, const std::string& prefix);
/// addAuth("digest", cert), sent at once (the client re-sends it on every reconnect); wait for
/// the answer with wait_auth().
std::shared_ptr<auth_state> add_auth(session& s, const std::string& cert);
/// The answer to the session's digest authentication, waiting until `until`.
int wait_auth(session& s, steady_time until);

/// Runs `f` (one request), retrying it after a connection loss once the session reconnected,
/// until `until`. `f` must be safe to repeat.
int call(session& s, steady_time until, const std::function<int()>& f);

}  // namespace sqlock::zookeeper::detail
