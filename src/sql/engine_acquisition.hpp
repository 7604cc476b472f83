// One waiting request on an engine backend (sql_engine.hpp): the writer mark its busy exclusive
// attempts leave on the server (cleared when the request ends without the hold, so new shared
// holders are not kept out by a writer that stopped waiting) and the release watch a subclass
// with notifications offers (or capped jittered backoff without one).
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "sqlock/backend/acquisition.hpp"

namespace sqlock::sql {

class engine_backend;

/// A wait that ends when the store tells of a release (LISTEN/NOTIFY, a WAL file's change):
/// what a subclass of engine_backend with notifications gives each waiting request.
class release_watch {
 public:
  virtual ~release_watch() = default;
  /// Until a release may have happened since the last call, `until` or a stop.
  virtual void wait(steady_time until, const std::stop_token& stop) = 0;
  /// Called at the start of every attempt: a release after it wakes arm().
  virtual void attempt_starts() {}
  /// The non-blocking form of wait() (acquisition::arm): when to attempt again if `wake` is
  /// not called first; empty (the default) when the watch cannot wake without a thread (the
  /// acquisition backs off).
  virtual std::optional<steady_time> arm(steady_time until, std::function<void()> wake) {
    (void)until;
    (void)wake;
    return std::nullopt;
  }
  /// Drops the wake-up of arm().
  virtual void disarm() noexcept {}
};

/// One waiting request's place in its store's list of waiting requests
/// (engine_backend::wait_began()): taken after its first busy attempt, left when it ends.
class wait_listing {
 public:
  /// For `req` on `b` (both outlive it).
  wait_listing(engine_backend& b, const lock_request& req) noexcept : b_(b), req_(req) {}
  ~wait_listing() { leave(); }
  wait_listing(const wait_listing&) = delete;
  wait_listing& operator=(const wait_listing&) = delete;
  /// After an attempt of the request: a busy one (`obtained` false) lists it.
  void after_attempt(bool obtained);
  /// The request no longer waits: no longer listed. Never throws.
  void leave() noexcept;

 private:
  engine_backend& b_;
  const lock_request& req_;
  bool listed_ = false;
};

/// The engine's acquisition; a subclass adds what its backend keeps between attempts.
class engine_acquisition : public acquisition {
 public:
  /// For `req` on `b` (which outlives it); `watch` may be null (then waits back off per
  /// `policy`).
  engine_acquisition(engine_backend& b, lock_request req, const wait_policy& policy,
                     std::unique_ptr<release_watch> watch);
  /// Clears a writer mark left behind and leaves the list of waiting requests (cancel()).
  ~engine_acquisition() override;

  std::optional<lease_info> attempt(steady_time deadline) override;
  void wait(steady_time until, const std::stop_token& stop) override;
  /// The watch's arm() (empty without a watch: the core backs off).
  std::optional<steady_time> arm(steady_time until, waker wake) override;
  void disarm() noexcept override;
  /// Removes the request's writer mark at once rather than leaving it to its short expiry, and
  /// its row of the store's waiting requests.
  void cancel() noexcept override;
  /// cancel(), the writer mark removed with those of the other requests ending meanwhile
  /// (engine_backend::clear_writer_mark_then()).
  void cancel_then(std::function<void()> then) noexcept override;

  /// The request.
  const lock_request& request() const noexcept { return req_; }
  /// The last attempt left (true) or removed (false) the request's writer mark.
  void marked(bool on) noexcept { marked_ = on; }

 protected:
  /// What an attempt of the request answered, after listing the request as waiting when it
  /// is busy (what every override of attempt() returns through).
  std::optional<lease_info> listed(std::optional<lease_info> r) {
    listing_.after_attempt(r.has_value());
    return r;
  }

  engine_backend& backend_;  ///< the backend attempts go to
  lock_request req_;         ///< the request

 private:
  std::unique_ptr<release_watch> watch_;
  milliseconds initial_, cap_;
  unsigned waits_ = 0;
  bool marked_ = false;
  wait_listing listing_{backend_, req_};
};

}  // namespace sqlock::sql
