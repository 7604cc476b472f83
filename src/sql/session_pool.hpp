// Holds that live on a dedicated server session (PostgreSQL advisory locks, MySQL GET_LOCK):
// a small pool of long-lived sessions, each carrying the holds taken on it, for every SQL
// backend whose locks end with their session. The backend's driver (session_driver) opens a
// session and says what a dead one looks like and how a wait in the server is ended; the pool
// knows no vendor.
// The pool opens a session when one is needed and kills it when its state is unknown. It
// watches the sockets of the open sessions for a hang-up on the driver threads
// (sqlock::watch_descriptor, so answers to calls do not wake it, and no thread of its own),
// pings every period the holding sessions whose socket the driver cannot tell, and, when an
// idle one dies (the server closed it, an administrator terminated it), kills it and reports
// every hold it carried as lost at once. A session busy with a call is checked
// when the call returns. Besides the `size` sessions that calls take (pick), `waiters` waiter
// sessions serve callers that wait inside the server: only one carrying no hold is handed out
// for a wait (idle_waiter), so a blocked wait never delays the release of a hold; a hold it
// then gets stays on it like any other. Every session counts in the client's connection budget
// (size + waiters of it, sql::split_budget): a caller that finds every session busy waits for
// one within its deadline (sql::connection_wait_deadline), then gets sql::pool_busy. Losses are
// reported from a driver thread only, one look at a time, with no lock held, so a listener may
// call back into the backend.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "sql/connection.hpp"
#include "sql/sql_errors.hpp"
#include "sqlock/backend.hpp"

namespace sqlock::sql {

/// While it lives, a stop of the caller ends the wait its session runs in the server (the
/// driver's way: a cancel request, a KILL QUERY from another session, the socket shut down).
class wait_breaker {
 public:
  virtual ~wait_breaker() = default;
  /// True once the stop came during the wait: the session's state is unknown, kill it.
  virtual bool fired() const = 0;
};

/// A server session of the pool, opened by the backend's driver: the engine's connection plus
/// what the pool's watch and a wait in the server need.
class pooled_session : public connection {
 public:
  /// The socket to watch while idle; -1 when closed or not known (the pool then pings).
  virtual int socket() const = 0;
  /// True while the session is usable. Called by the pool when the idle socket became
  /// readable (the driver reads what arrived) or, for a session without a known socket, as a
  /// ping; false means the session is dead.
  virtual bool alive() = 0;
  /// The server's id of this session (a process id, CONNECTION_ID()), by `deadline`.
  virtual std::int64_t session_id(steady_time deadline) = 0;
  /// Made before a statement that waits in the server; see wait_breaker.
  virtual std::unique_ptr<wait_breaker> break_wait_on(const std::stop_token& stop) = 0;
};

/// What a backend gives the pool: how to open one session, connected by a deadline
/// (connection_error, or server_full, when it cannot be). Closing is the session's destructor.
using session_driver = std::function<std::unique_ptr<pooled_session>(steady_time deadline)>;

/// Told of a hold lost with its session: name and owner.
using session_loss = std::function<void(const std::string& name, const std::string& owner)>;

/// A hold a session carries.
struct session_hold {
  std::string owner;
  std::uint64_t fence = 0;
  bool shared = false;  ///< a shared or permit hold
  std::string key;      ///< the backend's own name of the lock on the server, if it needs one
};

/// How the pool hands its sessions to calls.
enum class session_spread {
  /// Round the sessions: successive calls get different sessions (PostgreSQL advisory: a
  /// shared or permit request looks for one without another owner's hold of its name).
  round_robin,
  /// The first free open session; another is opened only when every open one is in a call
  /// (MySQL GET_LOCK: one session carries the holds of a client that takes them one by one).
  first_free,
};

class session_pool {
  struct session;
  struct shared;

 public:
  /// `size` sessions (>= 1) calls take, handed out as `spread` says, plus `waiters` waiter
  /// sessions, opened on first use by `open`; `lost` is called from a driver thread for
  /// every hold of a session that died or was killed.
  session_pool(std::size_t size, std::size_t waiters, session_driver open, session_loss lost,
               session_spread spread = session_spread::round_robin);
  /// Waits for a report of losses under way on another thread.
  ~session_pool();
  session_pool(const session_pool&) = delete;
  session_pool& operator=(const session_pool&) = delete;

  /// A session taken for one call (its turn held); checks the session when the call ends.
  class call {
   public:
    call(call&&) noexcept;
    ~call();
    /// The session's connection.
    pooled_session& conn();
    /// The hold this session carries for `name`; null if none.
    const session_hold* held(const std::string& name) const;
    /// Records that the session now carries `h`, the hold of `name`.
    void keep(const std::string& name, session_hold h);
    /// Forgets the hold on `name` (released or found gone).
    void forget(const std::string& name);
    /// True when the session carries no hold.
    bool empty() const;
    /// Closes the session (the server frees its holds); its holds but `except` are reported
    /// lost. Use when the session's state is unknown.
    void kill(const std::string& except = {});
    /// Whether the backend's one-time setup of this session (a statement every new session
    /// runs first) was done; set_up() records it.
    bool is_set_up() const;
    void set_up();
    /// The session itself, as a lease's backend-private state.
    std::shared_ptr<void> token() const;

   private:
    friend class session_pool;
    // Takes over the turn of `s`, which the caller has taken.
    call(std::shared_ptr<session> s, std::shared_ptr<shared> sh);
    std::shared_ptr<session> s_;  // null once moved from
    std::shared_ptr<shared> sh_;
  };

  /// A session for one call: a free one (see session_spread), else the next in turn once its
  /// call ends, locked by `deadline` (sql::pool_busy when every session stays busy: nothing was
  /// sent) and connected (connection_error when it cannot be, by then).
  call pick(steady_time deadline);
  /// A waiter session that is free and carries no hold, connected by `deadline`; nullopt when
  /// every waiter session is busy or holds something.
  std::optional<call> idle_waiter(steady_time deadline);
  /// Connects the session the next pick() takes, by `deadline`, so that a first lock need not
  /// connect within its own (possibly short) deadline.
  void open_next(steady_time deadline);
  /// The session of a lease (its token()) locked, if it still carries the hold of `name` for
  /// `owner`; nullopt when the hold is gone. sql::pool_busy when the session stays busy past
  /// `deadline`.
  std::optional<call> holding(const std::shared_ptr<void>& token, const std::string& name,
                              const std::string& owner, steady_time deadline);

 private:
  std::shared_ptr<shared> sh_;
};

}  // namespace sqlock::sql
