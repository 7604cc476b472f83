// Holds that live on a dedicated session (PostgreSQL advisory locks; the shape of MySQL's
// GET_LOCK too): a small pool of long-lived connections, each carrying the holds taken on it.
// The pool opens a session when one is needed and kills it when its state is unknown; a
// watcher thread polls the sockets of the open sessions for a hang-up (so answers to calls do
// not wake it) and, when an idle one dies (the server closed it, an administrator terminated
// it), kills it and reports every hold it carried as lost at once. A session busy with a call
// is checked when the call returns. Besides the sessions that
// take turns (pick), a few waiter sessions serve callers that wait inside the server: only one
// carrying no hold is handed out for a wait (idle_waiter), so a blocked wait never delays the
// release of a hold; a hold it then gets stays on it like any other. Losses are reported from
// the watcher thread only, with no lock held, so a listener may call back into the backend.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "sql/sql_engine.hpp"
#include "sqlock/backend.hpp"

namespace sqlock::postgres {

class statement_stopper;

/// A connection the pool can watch while it is idle.
class session_connection : public sql::connection {
 public:
  /// The socket to poll while idle (-1 once closed).
  virtual int socket() const = 0;
  /// The server's process id of this session (0 when closed).
  virtual int server_pid() const = 0;
  /// Called when the idle socket became readable: reads what arrived and says whether the
  /// session is still alive.
  virtual bool alive() = 0;
  /// While the returned object lives, a stop of `stop` ends the statement this session runs
  /// (statement_stopper.hpp); made before the statement is sent.
  virtual std::unique_ptr<statement_stopper> stop_on(const std::stop_token& stop) = 0;
};

/// Opens a session connection by a deadline.
using session_opener = std::function<std::unique_ptr<session_connection>(steady_time deadline)>;

/// Told of a hold lost with its session: name and owner.
using session_loss = std::function<void(const std::string& name, const std::string& owner)>;

class session_pool {
  struct session;
  struct shared;

 public:
  /// `size` sessions (>= 1) taken in turn plus `waiters` waiter sessions, opened on first use
  /// by `open`; `lost` is called from the watcher thread for every hold of a session that died
  /// or was killed.
  session_pool(std::size_t size, std::size_t waiters, session_opener open, session_loss lost);
  ~session_pool();
  session_pool(const session_pool&) = delete;
  session_pool& operator=(const session_pool&) = delete;

  /// A session taken for one call (its turn held); checks the session when the call ends.
  class call {
   public:
    call(call&&) noexcept;
    ~call();
    /// The session's connection (opened on first use).
    session_connection& conn();
    /// The fence of the hold this session carries for `name`, with its owner; nullopt if none.
    std::optional<std::pair<std::string, std::uint64_t>> held(const std::string& name) const;
    /// Records that the session now carries the hold (`name`, `owner`, `fence`); `shared` for
    /// a shared or permit hold.
    void keep(const std::string& name, const std::string& owner, std::uint64_t fence,
              bool shared = false);
    /// True when the session's hold of `name` is a shared or permit hold.
    bool holds_shared(const std::string& name) const;
    /// Forgets the hold on `name` (released or found gone).
    void forget(const std::string& name);
    /// Closes the session (the server frees its holds); its holds but `except` are reported
    /// lost. Use when the session's state is unknown.
    void kill(const std::string& except = {});
    /// The session itself, as a lease's backend-private state.
    std::shared_ptr<void> token() const { return s_; }

   private:
    friend class session_pool;
    // Takes over the turn of `s`, which the caller has taken.
    call(std::shared_ptr<session> s, std::shared_ptr<shared> sh);
    std::shared_ptr<session> s_;  // null once moved from
    std::shared_ptr<shared> sh_;
  };

  /// The next session in turn, locked by `deadline` (sql::pool_busy when it stays busy until
  /// then) and connected (connection_error when it cannot be, by then).
  call pick(steady_time deadline);
  /// A waiter session that is free and carries no hold, locked and connected by `deadline`;
  /// nullopt when every waiter session is busy or holds something.
  std::optional<call> idle_waiter(steady_time deadline);
  /// Connects the session the next pick() takes, by `deadline`, so that a first lock need not
  /// connect within its own (possibly short) deadline.
  void open_next(steady_time deadline);
  /// The session of a lease (its token()) locked, if it still carries the hold of `name` for
  /// `owner`; nullopt when the hold is gone. sql::pool_busy (a connection_error) when the
  /// session stays busy past `deadline`.
  std::optional<call> holding(const std::shared_ptr<void>& token, const std::string& name,
                              const std::string& owner, steady_time deadline);

 private:
  std::shared_ptr<shared> sh_;
  std::thread watcher_;
};

}  // namespace sqlock::postgres
