// The GET_LOCK backend: a session per hold, a server-side wait per attempt after the first busy
// one, and a watcher thread that reports holds whose session died.
#include "advisory_backend.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <thread>
#include <vector>

#include "connector.hpp"
#include "sqlock/mysql/dialect.hpp"
#include "sqlock/sql_engine.hpp"

namespace sqlock::mysql::detail {
namespace {

using clock = std::chrono::steady_clock;

/// The watcher's round: how long it polls, or how often it pings sessions of unknown socket.
constexpr milliseconds watch_period(100);
/// Margin kept between a server-side wait's end and the caller's deadline or the read timeout.
constexpr milliseconds wait_margin(100);

// A dedicated server session: holds at most one GET_LOCK lock, for `owner`.
struct session {
  std::mutex m;                      // held by the call (or the watcher's ping) using `conn`
  std::unique_ptr<connection> conn;  // null once closed
  std::string name;                  // the hold it carries ("" owner = none)
  std::string owner;
};

// One acquire() call's state: after the first busy attempt, attempts wait in the server.
struct server_wait final : wait_state {
  bool armed = false;
  void wait(steady_time) override { armed = true; }  // the next attempt waits in GET_LOCK
};

// What the watcher thread shares with the backend; outlives the backend when the thread had to
// be detached (the backend destroyed from inside a loss listener).
struct watch_state {
  std::mutex m;
  const int wake = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);  // a new hold, or stop
  watch_state() {
    if (wake < 0) throw backend_error("MySQL advisory watcher: eventfd failed");
  }
  ~watch_state() { ::close(wake); }
  watch_state(const watch_state&) = delete;
  watch_state& operator=(const watch_state&) = delete;
  void poke() const {
    const std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake, &one, sizeof one);  // a full counter wakes anyway
  }
  bool stop = false;
  std::vector<std::weak_ptr<session>> holding;  // sessions carrying a hold
};

class advisory_backend final : public sql::engine_backend {
 public:
  advisory_backend(const options& o, std::string url_text)
      : engine_backend(
            sql_bundle(), make_dialect(o.mode), [o] { return open_connection(o); },
            std::move(url_text), o.pool),
        opts_(o),
        wait_chunk_(std::max(o.timeout / 2 - wait_margin, milliseconds(100))),
        watch_(std::make_shared<watch_state>()) {
    set_auto_migrate(o.auto_migrate);
    set_io_timeout(o.timeout);
    watcher_ = std::thread([this, w = watch_] { watch(w); });
  }

  ~advisory_backend() override {
    {
      std::lock_guard g(watch_->m);
      watch_->stop = true;
    }
    watch_->poke();
    if (watcher_.get_id() == std::this_thread::get_id())
      watcher_.detach();
    else
      watcher_.join();
  }

  std::string kind() const override { return "mysql"; }

  std::unique_ptr<wait_state> open_wait(const lock_request&) override {
    return std::make_unique<server_wait>();
  }

  std::optional<lease_info> try_acquire(const lock_request& req, steady_time deadline,
                                        wait_state* ws) override {
    check_name(req.name, "lock name");
    milliseconds wait(0);
    if (ws != nullptr && static_cast<server_wait*>(ws)->armed) {
      auto left = std::chrono::floor<milliseconds>(deadline - clock::now()) - wait_margin;
      wait = std::clamp(left, milliseconds(0), wait_chunk_);
    }
    sql::params p = params_for(req);
    p.lease_ms = wait.count();  // advisory: the server-side wait
    auto s = take_session(deadline);
    std::unique_lock g(s->m);
    sql::rows r;
    try {
      // `wait` ends before the deadline and within half the I/O timeout: the exchange fits.
      r = s->conn->run(dialect_.acquire, p, deadline);
    } catch (const sql::transient_error&) {
      // The procedure released what it took before failing: the session is clean.
      g.unlock();
      give_back(std::move(s));
      throw connection_error("MySQL advisory acquire of '" + req.name + "' hit a transient error");
    } catch (...) {
      s->conn.reset();  // unknown state: ending the session frees anything it took
      throw;
    }
    if (r.empty() || r[0].empty() || !r[0][0]) {
      g.unlock();
      give_back(std::move(s));
      return std::nullopt;
    }
    std::uint64_t fence = 0;
    try {
      fence = sql::decode_u64(r[0][0], "fence from sqlock_advisory_acquire");
    } catch (...) {
      s->conn.reset();
      throw;
    }
    s->name = req.name;
    s->owner = req.owner;
    g.unlock();
    {
      std::lock_guard w(watch_->m);
      watch_->holding.push_back(s);
    }
    watch_->poke();  // watch it from now, not from the watcher's next round
    return lease_info{req.name, req.owner, fence, std::move(s)};
  }

  bool renew(const lease_info& l, milliseconds, steady_time deadline) override {
    auto s = std::static_pointer_cast<session>(l.state);
    if (!s) return false;
    std::lock_guard g(s->m);
    if (!s->conn || s->owner != l.owner) return false;
    try {
      bool ok = sql::says_true(s->conn->run(dialect_.renew, params_for(l), deadline));
      if (!ok) drop(*s);  // whatever the session still has is not our hold any more
      return ok;
    } catch (const connection_error&) {
      // The session is gone, and GET_LOCK locks die with their session: the hold is lost.
      drop(*s);
      return false;
    }
  }

  bool release(const lease_info& l, steady_time deadline) override {
    auto s = std::static_pointer_cast<session>(l.state);
    if (!s) return false;
    std::unique_lock g(s->m);
    if (!s->conn || s->owner != l.owner) return false;
    bool ok = false;
    try {
      ok = sql::says_true(s->conn->run(dialect_.release, params_for(l), deadline));
    } catch (...) {
      drop(*s);  // never leave the lock held: ending the session frees it
      throw;     // connection_error: the outcome is unknown (the server frees it anyway)
    }
    s->name.clear();
    s->owner.clear();
    if (!ok) {
      drop(*s);
      return false;
    }
    g.unlock();
    give_back(std::move(s));
    return true;
  }

  capabilities caps() const noexcept override {
    auto c = engine_backend::caps();
    c.session_bound = true;
    c.linger = false;  // a GET_LOCK hold ends with its session
    return c;
  }

 private:
  static void drop(session& s) {
    s.name.clear();
    s.owner.clear();
    s.conn.reset();
  }

  std::shared_ptr<session> take_session(steady_time deadline) {
    {
      std::lock_guard g(sessions_mutex_);
      while (!idle_sessions_.empty()) {
        auto s = std::move(idle_sessions_.back());
        idle_sessions_.pop_back();
        if (s->conn) return s;
      }
    }
    if (clock::now() >= deadline)
      throw connection_error("MySQL advisory session not opened: the deadline passed");
    auto s = std::make_shared<session>();
    s->conn = open_connection(opts_);
    return s;
  }

  void give_back(std::shared_ptr<session> s) {
    std::lock_guard g(sessions_mutex_);
    if (s->conn && idle_sessions_.size() < opts_.pool) idle_sessions_.push_back(std::move(s));
  }

  // Watches every holding session that no call is using: polls the sockets it knows for a
  // close or stray bytes (then confirms with a ping), pings the others each round; a dead
  // session's hold is reported lost at once.
  void watch(const std::shared_ptr<watch_state>& w) {
    std::unique_lock g(w->m);
    while (!w->stop) {
      auto holding = w->holding;
      g.unlock();
      std::vector<std::pair<std::string, std::string>> lost;
      std::vector<std::weak_ptr<session>> still, polled;
      std::vector<pollfd> fds;
      // Under the session's mutex: is it dead (no connection, or no answer to a ping when its
      // socket is unknown or `check`)? Sessions a call is using are left to that call.
      auto examine = [&](const std::weak_ptr<session>& weak, bool check) {
        auto s = weak.lock();
        if (!s) return;
        std::unique_lock sg(s->m, std::try_to_lock);
        if (!sg.owns_lock()) {
          still.push_back(weak);
          return;
        }
        if (s->owner.empty()) return;  // released (or dropped) since
        const int fd = s->conn ? s->conn->socket() : -1;
        if (s->conn && !check && fd >= 0) {
          polled.push_back(weak);
          fds.push_back(pollfd{fd, POLLIN | POLLRDHUP, 0});
          return;
        }
        if (s->conn && s->conn->alive()) {
          still.push_back(weak);
          return;
        }
        lost.emplace_back(s->name, s->owner);
        drop(*s);
      };
      for (auto& weak : holding) examine(weak, false);
      // A descriptor closed by a call meanwhile only gives a spurious wake: the ping decides.
      fds.push_back(pollfd{w->wake, POLLIN, 0});
      ::poll(fds.data(), fds.size(), static_cast<int>(watch_period.count()));
      std::uint64_t pokes = 0;
      if (fds.back().revents != 0) {
        [[maybe_unused]] auto n = ::read(w->wake, &pokes, sizeof pokes);  // clear the pokes
      }
      fds.pop_back();
      for (std::size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].revents != 0)
          examine(polled[i], true);
        else
          still.push_back(polled[i]);
      }
      for (auto& [name, owner] : lost) {
        report_lost(name, owner);  // no lock held: a listener may call back into the backend
        std::lock_guard sg(w->m);
        if (w->stop) return;  // the listener destroyed the backend (this thread was detached)
      }
      g.lock();
      // Holds taken while this round ran were appended after the snapshot: keep them.
      still.insert(still.end(), w->holding.begin() + static_cast<std::ptrdiff_t>(holding.size()),
                   w->holding.end());
      w->holding = std::move(still);
    }
  }

  options opts_;
  milliseconds wait_chunk_;
  std::mutex sessions_mutex_;
  std::vector<std::shared_ptr<session>> idle_sessions_;
  std::shared_ptr<watch_state> watch_;
  std::thread watcher_;  // last: started once everything it uses exists
};

}  // namespace

std::shared_ptr<backend> open_advisory(const options& o, std::string url_text) {
  return std::make_shared<advisory_backend>(o, std::move(url_text));
}

}  // namespace sqlock::mysql::detail
