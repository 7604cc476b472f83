// The server sessions of the MySQL advisory backend. A session carries any number of GET_LOCK
// holds (they all end with it); calls take a session that no other call is using. At most
// `calls` sessions serve attempts without a wait and releases; up to `waiters` more may be
// opened for waits in the server: never more than `calls + waiters` sessions at once (their
// share of the client's connection budget). Sessions are kept once opened; one is closed only
// when its state is unknown (and replaced on demand). A session blocked in GET_LOCK carries no
// hold, so a wait never delays the release of a hold; how many waits run in the server at once is
// bounded by slots (reserve_wait()), and a caller without a slot polls.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "connector.hpp"

namespace sqlock::mysql::detail {

/// (name, owner) of holds that ended with their session.
using hold_list = std::vector<std::pair<std::string, std::string>>;

/// A GET_LOCK lock a session carries.
struct hold {
  std::string owner;
  std::string lock_name;  ///< the server's GET_LOCK name (sqlock_lock_name(name))
  std::uint64_t fence = 0;
};

/// One server session. `m` guards everything but the atomics.
struct session {
  std::timed_mutex m;                 ///< held by the call using `conn`
  std::unique_ptr<connection> conn;   ///< null once closed
  std::map<std::string, hold> holds;  ///< by lock name: the locks it carries
  std::atomic<bool> dead{false};      ///< closed: no call takes it any more
  std::atomic<bool> waiting{false};   ///< blocked in a server-side wait
  std::atomic<int> fd{-1};            ///< its socket once known (for the watcher)
  bool epoch_ready = false;           ///< the fence epoch was made live on it (MariaDB lean pair)

  /// Closes the session (the server frees its locks) under `m`; returns its holds but `keep`.
  hold_list close(const std::string& keep = {});
};

/// A session and the lock on its mutex; the call using it holds both.
struct taken_session {
  std::shared_ptr<session> s;
  std::unique_lock<std::timed_mutex> lock;
};

/// The sessions of one backend.
class session_pool {
 public:
  /// Sessions open with `o` and count in `counter`.
  session_pool(options o, std::size_t calls, std::size_t waiters,
               std::shared_ptr<sql::connection_counter> counter);

  /// A session for an attempt without a wait, a renewal or a release: one no call is using, a
  /// new one while fewer than `calls` exist, else the next in turn once its call ends (by
  /// `deadline`, else sql::pool_busy: nothing was sent).
  taken_session take(steady_time deadline);

  /// A session that carries no hold for a wait in the server, marked waiting; empty when none
  /// is free and `calls + waiters` exist. Call with a slot from reserve_wait().
  taken_session take_for_wait();

  /// A slot for one wait in the server; false when `waiters` waits already hold one.
  bool reserve_wait();
  /// Gives a slot back.
  void end_wait();

  /// Every open session (for the watcher).
  std::vector<std::shared_ptr<session>> all();

 private:
  taken_session open_new();  // under m_
  void prune();              // under m_: forgets closed sessions

  const options opts_;
  const std::size_t calls_, waiters_;
  const std::shared_ptr<sql::connection_counter> counter_;
  std::mutex m_;
  std::vector<std::shared_ptr<session>> sessions_;
  std::size_t next_ = 0;        // where take() starts looking
  std::size_t wait_slots_ = 0;  // slots reserved
};

}  // namespace sqlock::mysql::detail
