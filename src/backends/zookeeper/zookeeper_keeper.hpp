// The session of a ZooKeeper backend over its life: starts a handle without waiting (calls wait
// for the session within their own deadlines), sets each new session up once (the digest
// authentication's answer, the base path), replaces a session that expired, and ends it at once
// on close (waits end, the server deletes its ephemeral nodes now). Internal.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>

#include "sqlock/zookeeper/zookeeper.hpp"
#include "zookeeper_connection.hpp"

namespace sqlock::zookeeper::detail {

class session_keeper {
 public:
  /// `on_gone(epoch)` is told (on the client's completion thread) when a session expires;
  /// `prepare(session, until)` runs once on every new session after authentication.
  session_keeper(const options& o, counters& stats, std::function<void(std::uint64_t)> on_gone,
                 std::function<void(session&, steady_time)> prepare);
  ~session_keeper() { close_now(); }
  session_keeper(const session_keeper&) = delete;
  session_keeper& operator=(const session_keeper&) = delete;

  /// A connected, set-up session by `until`, replacing an expired one. Throws
  /// connection_error (session_gone when it expired meanwhile), auth_error when refused.
  std::shared_ptr<session> live(steady_time until);
  /// The current session, as it is (null after close).
  std::shared_ptr<session> current();
  /// Ends the session now; later calls to live() throw connection_error.
  void close_now();
  /// close_now() was called.
  bool closed() const { return closed_; }

 private:
  std::shared_ptr<session> start();
  void set_up(session& s, steady_time until);

  const options& opts_;
  counters& stats_;
  std::function<void(std::uint64_t)> on_gone_;
  std::function<void(session&, steady_time)> prepare_;
  std::mutex m_;  // session_, epoch_
  std::shared_ptr<session> session_;
  std::uint64_t epoch_ = 0;
  std::atomic<bool> closed_{false};
};

}  // namespace sqlock::zookeeper::detail
