// The GET_LOCK backend: a few shared server sessions carrying the holds (session_pool), waits in
// the server on sessions that carry no hold (a bounded number at once; the other waiters poll),
// and a watcher thread that reports the holds of a session that died. The sessions, the
// waiters and the engine's statement pool (records, list, the kills that stop a wait) share
// the client's connection budget. On MariaDB a hold is taken
// with the lean pair (sql/mysql/advisory_session.sql: nothing written) and recorded in the
// background once it lasts (hold_recorder); on MySQL 8 (no sequences) with the procedure, which
// records it at once.
#include "advisory_backend.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "advisory_sessions.hpp"
#include "connector.hpp"
#include "diagnostics.hpp"
#include "dialect.hpp"
#include "galera.hpp"
#include "lock_name.hpp"
#include "sql/connection_budget.hpp"
#include "sql/hold_recorder.hpp"
#include "sql/hold_recorder_json.hpp"
#include "sql/sql_engine.hpp"
#include "sqlock/random.hpp"
#include "wait_stopper.hpp"

namespace sqlock::mysql::detail {
namespace {

using clock = std::chrono::steady_clock;

/// The watcher's round: how often it pings holding sessions whose socket is not known.
constexpr milliseconds watch_period(100);
/// Margin kept between a server-side wait's end and the caller's deadline or the read timeout.
constexpr milliseconds wait_margin(100);
/// Longest pause of a waiter that got no slot to wait in the server (it polls).
constexpr milliseconds poll_cap(50);

// One waiting request's state between its attempts: after a busy attempt, the next attempt
// waits in GET_LOCK when a slot is free; without one, wait() sleeps a jittered backoff and the
// next attempt polls.
struct server_wait {
  explicit server_wait(std::shared_ptr<session_pool> p) : pool(std::move(p)) {}
  ~server_wait() {
    if (slot) pool->end_wait();
  }
  server_wait(const server_wait&) = delete;
  server_wait& operator=(const server_wait&) = delete;
  void wait(steady_time until, const std::stop_token& stop) {
    if (!slot && !starved) slot = pool->reserve_wait();
    if (slot) return;  // the next attempt waits in the server
    starved = false;
    sleep_until(std::min<steady_time>(
                    clock::now() + backoff_delay(polls++, milliseconds(2), poll_cap), until),
                stop);
  }
  std::shared_ptr<session_pool> pool;
  bool slot = false;     // reserved: the next attempt waits in the server
  bool starved = false;  // the last slot found no session free: poll once before the next
  unsigned polls = 0;
};

// What the watcher thread shares with the backend; outlives the backend when the thread had to
// be detached (the backend destroyed from inside a loss listener).
struct watch_state {
  std::mutex m;
  const int wake = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);  // a new socket to watch, or stop
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
};

class advisory_backend final : public sql::engine_backend {
 public:
  advisory_backend(const options& o, std::string url_text, std::size_t statements,
                   std::shared_ptr<sql::connection_counter> counter)
      : engine_backend(
            sql_bundle(), make_dialect(o.mode),
            [o, counter] { return open_connection(o, counter); }, std::move(url_text), statements,
            true, counter),
        opts_(o),
        recorder_([this](const std::vector<sql::hold_recorder::record>& batch,
                         steady_time deadline) { record(batch, deadline); },
                  o.record_after, o.timeout),
        wait_chunk_(std::max(o.timeout / 2 - wait_margin, milliseconds(100))),
        pool_(std::make_shared<session_pool>(o, o.sessions, o.waiters, counter_)),
        watch_(std::make_shared<watch_state>()) {
    set_auto_migrate(o.auto_migrate);
    set_io_timeout(o.timeout);
    watcher_ = std::thread([this, w = watch_, p = pool_] { watch(w, p); });
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

  std::unique_ptr<acquisition> make_acquisition(const lock_request& req,
                                                const wait_policy& policy) override;

  std::optional<lease_info> try_acquire(const lock_request& req, steady_time deadline) override {
    return attempt_with(req, deadline, nullptr);
  }

  // One attempt; `sw` is the state of the waiting request it belongs to (null: a single try).
  std::optional<lease_info> attempt_with(const lock_request& req, steady_time deadline,
                                         server_wait* sw) {
    check_name(req.name, "lock name");
    taken_session t;
    milliseconds wait(0);
    if (sw != nullptr && sw->slot) {
      auto left = std::chrono::floor<milliseconds>(deadline - clock::now()) - wait_margin;
      wait = std::clamp(left, milliseconds(0), wait_chunk_);
      if (wait > milliseconds(0)) t = pool_->take_for_wait();
      sw->starved = !t.s;
      sw->slot = false;
      pool_->end_wait();
    }
    if (!t.s) {
      wait = milliseconds(0);
      try {
        t = pool_->take(deadline);
      } catch (const sql::pool_busy&) {
        return std::nullopt;  // every session stayed busy: nothing was asked, the caller may wait
      }
    }
    auto& s = *t.s;
    if (auto it = s.holds.find(req.name); it != s.holds.end()) {
      // This session holds the name (GET_LOCK would nest): this owner's hold again, or busy.
      s.waiting = false;
      if (it->second.owner != req.owner) return std::nullopt;
      return lease_info{req.name, req.owner, it->second.fence, t.s};
    }
    sql::params p = params_for(req);
    p.lease_ms = wait.count();  // advisory: the server-side wait
    std::string lock_name;      // the GET_LOCK name (lean pair; the procedure answers it itself)
    sql::rows r;
    hold_list lost;
    bool stopped = false;  // the caller was stopped during a wait in the server
    bool lean = false;     // taken with sqlock_advisory_take (MariaDB)
    std::uint64_t session_id = 0;
    try {
      lean = lean_pair(*s.conn, deadline);
      if (lean) {
        if (!s.epoch_ready) {
          // A new session: the server may have started since the last one, and fences made
          // before the fence epoch is raised could repeat older ones (migrations/mysql/V004).
          s.conn->run(epoch_, {}, deadline);
          s.epoch_ready = true;
        }
        session_id = s.conn->server_id(deadline);  // asked once per session
        lock_name = get_lock_name(req.name);
        // sqlock_advisory_take takes the GET_LOCK name (in :prefix, which the statement has no
        // other use for) and the name (:name).
        p.prefix = lock_name;
      }
      std::optional<wait_stopper> stopper;
      if (wait > milliseconds(0) && req.stop.stop_possible())
        stopper.emplace(
            [this](const std::string& kill, steady_time until) {
              with_connection([&](sql::connection& c) { c.query(kill, until); }, until);
            },
            s.conn->server_id(deadline), s.conn->socket(), req.stop);
      try {
        // `wait` ends before the deadline and within half the I/O timeout: the exchange fits.
        r = s.conn->run(lean ? lock_ : dialect_.acquire, p, deadline);
      } catch (...) {
        if (!stopper || !stopper->fired()) throw;  // a killed or cut-off wait: stopped below
      }
      stopped = stopper && stopper->fired();
      s.waiting = false;
      if (!stopped) note_socket(s);
    } catch (const sql::transient_error&) {
      // The procedure released what it took before failing: the session is clean.
      s.waiting = false;
      throw connection_error("MySQL advisory acquire of '" + req.name + "' hit a transient error");
    } catch (...) {
      s.waiting = false;
      lost = s.close();  // unknown state: ending the session frees anything it took
      t.lock.unlock();
      report(lost);
      throw;
    }
    if (stopped) {
      // Closed whatever the wait returned (a lock it just got goes with it): a kill still on
      // its way must meet no later statement of this session (wait_stopper.hpp).
      lost = s.close();
      t.lock.unlock();
      report(lost);
      return std::nullopt;
    }
    if (r.empty() || r[0].empty() || !r[0][0]) return std::nullopt;
    std::uint64_t fence = 0;
    try {
      fence = sql::decode_u64(r[0][0], "fence from sqlock_advisory_acquire");
    } catch (...) {
      lost = s.close();
      t.lock.unlock();
      report(lost);
      throw;
    }
    if (lean) {
      s.holds[req.name] = hold{req.owner, lock_name, fence};
      recorder_.held({req.name, req.owner, req.holder, fence, static_cast<std::int64_t>(session_id),
                      clock::now()});
    } else {
      // No GET_LOCK name: routines of schema version 1 (a `sqlock migrate` of an older
      // library re-created them); the release then goes through sqlock_advisory_release.
      s.holds[req.name] =
          hold{req.owner, r[0].size() > 2 && r[0][2] ? *r[0][2] : std::string(), fence};
    }
    lease_info l{req.name, req.owner, fence, t.s};
    // Session-bound: the lease runs from the grant, whatever GET_LOCK waited before it.
    l.sent = clock::now();
    return l;
  }

  bool renew(const lease_info& l, milliseconds, steady_time deadline) override {
    return on_holding_session(l, deadline, false);
  }

  // A plain RELEASE_LOCK of the name and of the fence on the session known to carry the hold
  // for this owner: no write (a record of the hold goes stale, see sql/mysql/advisory.sql), one
  // round trip.
  bool release(const lease_info& l, steady_time deadline) override {
    recorder_.released(l.name, l.owner);
    return on_holding_session(l, deadline, true);
  }

  /// This process's holds are recorded first, so that it sees every one of them.
  std::vector<lock_status> list(std::string_view prefix) override {
    recorder_.flush(admin_deadline());
    return engine_backend::list(prefix);
  }

  void verify(steady_time deadline) override {
    refuse_read_only(*this, opts_, deadline);
    refuse_galera(*this, server_address(opts_), "mode=advisory", deadline);
    engine_backend::verify(deadline);
  }
  store_diagnostics* diagnostics() noexcept override { return &diagnostics_; }

  capabilities caps() const noexcept override {
    auto c = engine_backend::caps();
    c.session_bound = true;
    c.linger = false;  // a GET_LOCK hold ends with its session
    return c;
  }

 private:
  // A hold ended with its session: not to be recorded any more, and its holder told.
  void report_one(const std::string& name, const std::string& owner) {
    recorder_.released(name, owner);
    report_lost(name, owner);
  }
  void report(const hold_list& lost) {
    for (auto& [name, owner] : lost) report_one(name, owner);
  }

  // Whether holds are taken with the lean pair: on MariaDB (its sequence gives the fences), not
  // on MySQL 8. Asked once per backend, on the first session used.
  bool lean_pair(connection& c, steady_time deadline) {
    int f = flavor_.load();
    if (f == 0) {
      f = sql::says_true(c.query("SELECT @@version LIKE '%MariaDB%'", deadline)) ? 1 : 2;
      flavor_.store(f);
    }
    return f == 1;
  }

  // Writes a batch of hold_recorder's records.
  void record(const std::vector<sql::hold_recorder::record>& batch, steady_time deadline) {
    sql::params p;
    p.holds = sql::to_json(batch);
    run(record_, p, deadline);  // the engine's pool: transient errors retried, links replaced
  }

  // After a call: a session's socket, once the driver knows it, is watched from now on.
  void note_socket(session& s) {
    if (s.fd >= 0) return;
    const int fd = s.conn ? s.conn->socket() : -1;
    if (fd < 0) return;
    s.fd = fd;
    watch_->poke();
  }

  // Runs `op` (renew or release) for the hold `l` on the session carrying it; false when that
  // session no longer carries it for this owner. A session that fails is closed: its other
  // holds are lost (reported), this one's outcome is the caller's (false or the error).
  bool on_holding_session(const lease_info& l, steady_time deadline, bool releasing) {
    auto s = std::static_pointer_cast<session>(l.state);
    if (!s) return false;
    std::unique_lock g(s->m, std::defer_lock);
    if (!g.try_lock_until(sql::connection_wait_deadline(deadline)))
      throw connection_error("MySQL advisory session of '" + l.name +
                             "' stayed busy past the call's deadline");
    auto it = s->holds.find(l.name);
    if (s->dead || it == s->holds.end() || it->second.owner != l.owner) return false;
    bool ok = false;
    hold_list lost;
    try {
      sql::params p = params_for(l);
      const sql::operation* op = nullptr;
      if (it->second.lock_name.empty()) {  // schema version 1's routines
        op = releasing ? &dialect_.release : &dialect_.renew;
      } else {
        op = releasing ? &unlock_ : &holding_;
        p.name = it->second.lock_name;
        p.fence = static_cast<std::int64_t>(it->second.fence);
      }
      ok = sql::says_true(s->conn->run(*op, p, deadline));
    } catch (const connection_error&) {
      lost = s->close(l.name);  // GET_LOCK locks die with their session: never left held
      g.unlock();
      report(lost);
      if (releasing) throw;  // the outcome is unknown (the server frees it anyway)
      return false;          // renew: the session is gone, so is the hold
    } catch (...) {
      lost = s->close(l.name);
      g.unlock();
      report(lost);
      throw;
    }
    if (ok && !releasing) return true;
    if (!ok) recorder_.released(l.name, l.owner);
    s->holds.erase(l.name);
    if (!ok && releasing) {
      // The server says the session does not carry it: whatever it has is not ours any more.
      lost = s->close(l.name);
      g.unlock();
      report(lost);
    }
    return ok;
  }

  // Watches every open session's socket for the server closing it (POLLRDHUP; a reply never
  // wakes it) and pings, each round, the holding sessions whose socket is unknown; a dead
  // session's holds are reported lost at once. Sessions a call is using are left to that call.
  void watch(const std::shared_ptr<watch_state>& w, const std::shared_ptr<session_pool>& pool) {
    for (;;) {
      {
        std::lock_guard g(w->m);
        if (w->stop) return;
      }
      std::vector<std::shared_ptr<session>> polled;
      std::vector<pollfd> fds;
      hold_list lost;
      for (auto& s : pool->all()) {
        const int fd = s->fd;
        if (fd >= 0) {
          polled.push_back(s);
          fds.push_back(pollfd{fd, POLLRDHUP, 0});
          continue;
        }
        std::unique_lock sg(s->m, std::try_to_lock);
        if (!sg.owns_lock() || s->dead || s->holds.empty()) continue;
        if (!s->conn->alive()) append(lost, s->close());
      }
      fds.push_back(pollfd{w->wake, POLLIN, 0});
      ::poll(fds.data(), fds.size(), static_cast<int>(watch_period.count()));
      if (fds.back().revents != 0) {
        std::uint64_t pokes = 0;
        [[maybe_unused]] auto n = ::read(w->wake, &pokes, sizeof pokes);  // clear the pokes
      }
      fds.pop_back();
      bool busy = false;  // a closed socket whose session a call is using: that call sees it
      for (std::size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        auto& s = polled[i];
        std::unique_lock sg(s->m, std::try_to_lock);
        if (!sg.owns_lock())
          busy = true;
        else if (!s->dead)
          append(lost, s->close());
      }
      for (auto& [name, owner] : lost) {
        report_one(name, owner);  // no lock held: a listener may call back into the backend
        std::lock_guard sg(w->m);
        if (w->stop) return;  // the listener destroyed the backend (this thread was detached)
      }
      if (busy) std::this_thread::sleep_for(milliseconds(1));  // do not spin on that socket
    }
  }

  static void append(hold_list& to, hold_list from) {
    to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
  }

  // The lean pair (MariaDB) and its checks, on the GET_LOCK names of the name and the fence.
  // sqlock_advisory_take: sqlock_advisory_lock that also refuses a name a row mode holds
  // (schema version 5, sql/mysql/advisory_session.sql).
  const sql::operation lock_{"advisory_lock",
                             {"SELECT sqlock_advisory_take(:prefix, :name, :lease_ms)"}};
  const sql::operation unlock_{
      "advisory_unlock", {"SELECT RELEASE_LOCK(:name), RELEASE_LOCK(CONCAT('sqlock!', :fence))"}};
  const sql::operation holding_{"advisory_holding",
                                {"SELECT COALESCE(IS_USED_LOCK(:name) = CONNECTION_ID() AND "
                                 "IS_USED_LOCK(CONCAT('sqlock!', :fence)) = CONNECTION_ID(), 0)"}};
  const sql::operation record_{"advisory_record", {"CALL sqlock_advisory_record(:holds)"}};
  const sql::operation epoch_{"fence_epoch", {"CALL sqlock_fence_epoch_raise(@sqlock_epoch)"}};
  const options opts_;  // the URL's options: the read-only check and the diagnostics use them
  mysql_diagnostics diagnostics_{*this, opts_};
  sql::hold_recorder recorder_;  // before the sessions' watcher: its losses reach it
  std::atomic<int> flavor_{0};   // 0 = not known yet, 1 = MariaDB (lean pair), 2 = MySQL
  milliseconds wait_chunk_;
  std::shared_ptr<session_pool> pool_;
  std::shared_ptr<watch_state> watch_;
  std::thread watcher_;  // last: started once everything it uses exists
};

// The acquisition of one waiting request: attempts with its server_wait.
class server_acquisition final : public acquisition {
 public:
  server_acquisition(advisory_backend& b, std::shared_ptr<session_pool> pool, lock_request req)
      : b_(b), req_(std::move(req)), state_(std::move(pool)) {}
  std::optional<lease_info> attempt(steady_time deadline) override {
    return b_.attempt_with(req_, deadline, &state_);
  }
  void wait(steady_time until, const std::stop_token& stop) override { state_.wait(until, stop); }

 private:
  advisory_backend& b_;
  lock_request req_;
  server_wait state_;
};

std::unique_ptr<acquisition> advisory_backend::make_acquisition(const lock_request& req,
                                                                const wait_policy&) {
  return std::make_unique<server_acquisition>(*this, pool_, req);
}

}  // namespace

std::shared_ptr<backend> open_advisory(const options& o, std::string url_text,
                                       std::size_t statements,
                                       std::shared_ptr<sql::connection_counter> counter) {
  return std::make_shared<advisory_backend>(o, std::move(url_text), statements, std::move(counter));
}

}  // namespace sqlock::mysql::detail
