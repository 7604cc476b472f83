// The GET_LOCK backend: a few shared server sessions carrying the holds (the SQL engine's
// sql::session_pool, whose watcher reports the holds of a session that died), waits in the
// server on the pool's waiter sessions while they carry no hold (the other waiters poll). The
// sessions, the
// waiters and the engine's statement pool (records, list, the kills that stop a wait) share
// the client's connection budget. On MariaDB a hold is taken
// with the lean pair (sql/mysql/advisory_session.sql: nothing written) and recorded in the
// background once it lasts (hold_recorder); on MySQL 8 (no sequences) with the procedure, which
// records it at once.
#include "advisory_backend.hpp"

#include <algorithm>
#include <atomic>
#include <vector>

#include "diagnostics.hpp"
#include "dialect.hpp"
#include "galera.hpp"
#include "lock_name.hpp"
#include "lock_session.hpp"
#include "mysql_backend.hpp"
#include "mysql_driver.hpp"
#include "sql/hold_recorder.hpp"
#include "sql/hold_recorder_json.hpp"
#include "sql/session_pool.hpp"
#include "sql/sql_engine.hpp"
#include "sqlock/random.hpp"

namespace sqlock::mysql::detail {
namespace {

using clock = std::chrono::steady_clock;

/// Margin kept between a server-side wait's end and the caller's deadline or the read timeout.
constexpr milliseconds wait_margin(100);
/// Time the clean-up after a failed acquire may take past the caller's deadline.
constexpr milliseconds let_go_bound(1000);
/// Longest pause of a waiter that got no slot to wait in the server (it polls).
constexpr milliseconds poll_cap(50);

/// Pauses of a waiter whose name a row mode holds (the GET_LOCK lock is free, the rows are not):
/// 5 ms doubling to 100 ms, as sqlock_advisory_take paused inside the server before version 7.
constexpr milliseconds rows_pause_first(5);
constexpr milliseconds rows_pause_cap(100);

// One waiting request's state between its attempts: after a busy attempt, the next attempt
// waits in GET_LOCK on a waiter session if one is free; when none was, wait() sleeps a jittered
// backoff and the next attempt polls. After an attempt that found the name held by a row mode
// (GET_LOCK had it at once), a wait in GET_LOCK would return at once too: wait() pauses first.
struct server_wait {
  void wait(steady_time until, const std::stop_token& stop) {
    if (rows_hold) {
      rows_hold = false;
      in_server = true;
      sleep_until(
          std::min<steady_time>(
              clock::now() + backoff_delay(rows_pauses++, rows_pause_first, rows_pause_cap), until),
          stop);
      return;
    }
    if (!starved) {
      in_server = true;  // the next attempt waits in the server
      return;
    }
    starved = false;
    sleep_until(std::min<steady_time>(
                    clock::now() + backoff_delay(polls++, milliseconds(2), poll_cap), until),
                stop);
  }
  bool in_server = false;  // the next attempt waits in the server
  bool starved = false;    // the last one found no waiter session free: poll once before the next
  bool rows_hold = false;  // the last one got the GET_LOCK lock, but a row mode holds the name
  unsigned polls = 0;
  unsigned rows_pauses = 0;
};

class advisory_backend final : public sql::engine_backend {
 public:
  advisory_backend(const options& o, std::string url_text, std::size_t statements,
                   std::shared_ptr<sql::connection_counter> counter)
      : engine_backend(
            sql_bundle(), lock_dialect(o.mode),
            [o, counter] { return open_connection(o, counter); }, std::move(url_text), statements,
            true, counter),
        opts_(o),
        recorder_([this](const sql::hold_recorder::batch& b,
                         steady_time deadline) { record(b.records, deadline); },
                  o.record_after, o.timeout),
        wait_chunk_(std::max(o.timeout / 2 - wait_margin, milliseconds(100))),
        pool_(
            o.sessions, o.waiters,
            lock_sessions(o, counter_,
                          [this](const std::string& kill, steady_time until) {
                            with_connection([&](sql::connection& c) { c.query(kill, until); },
                                            until);
                          }),
            [this](const std::string& name, const std::string& owner) {
              recorder_.released(name, owner);  // not to be recorded any more
              report_lost(name, owner);
            },
            sql::session_spread::first_free) {
    set_auto_migrate(o.auto_migrate);
    set_release_in_background(o.async_release);
    set_io_timeout(o.timeout);
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
    milliseconds wait(0);
    auto c = [&]() -> std::optional<sql::session_pool::call> {
      if (sw != nullptr && sw->in_server) {
        sw->in_server = false;
        auto left = std::chrono::floor<milliseconds>(deadline - clock::now()) - wait_margin;
        wait = std::clamp(left, milliseconds(0), wait_chunk_);
        auto w = wait > milliseconds(0) ? pool_.idle_waiter(deadline) : std::nullopt;
        sw->starved = !w;
        if (w) return w;
      }
      wait = milliseconds(0);
      try {
        return pool_.pick(deadline);
      } catch (const sql::pool_busy&) {
        return std::nullopt;  // every session stayed busy: nothing was asked, the caller may wait
      }
    }();
    if (!c) return std::nullopt;
    if (const auto* h = c->held(req.name)) {
      // This session holds the name (GET_LOCK would nest): this owner's hold again, or busy.
      if (h->owner != req.owner) return std::nullopt;
      return lease_info{req.name, req.owner, h->fence, c->token()};
    }
    sql::params p = params_for(req);
    p.lease_ms = wait.count();  // advisory: the server-side wait
    std::string lock_name;      // the GET_LOCK name (lean pair; the procedure answers it itself)
    sql::rows r;
    bool stopped = false;  // the caller was stopped during a wait in the server
    bool lean = false;     // taken with sqlock_advisory_take (MariaDB)
    std::int64_t session_id = 0;
    std::string transient;  // a transient error of the call, after the session was cleaned up
    bool conflict = false;  // ... and it was a conflict (sql::conflict_error)
    try {
      auto& conn = c->conn();
      lean = lean_pair(conn, deadline);
      if (lean) {
        if (!c->is_set_up()) {
          // A new session: the server may have started since the last one, and fences made
          // before the fence epoch is raised could repeat older ones (migrations/mysql/V004).
          conn.run(epoch_, {}, deadline);
          c->set_up();
        }
        session_id = conn.session_id(deadline);  // asked once per session
        lock_name = get_lock_name(req.name);
        // sqlock_advisory_take takes the GET_LOCK name (in :prefix, which the statement has no
        // other use for) and the name (:name).
        p.prefix = lock_name;
      }
      std::unique_ptr<sql::wait_breaker> stopper;
      if (wait > milliseconds(0) && req.stop.stop_possible())
        stopper = conn.break_wait_on(req.stop);
      try {
        // `wait` ends before the deadline and within half the I/O timeout: the exchange fits.
        if (lean && wait > milliseconds(0)) {
          // The wait in a statement that reads no table (schema version 7: a statement keeps
          // what it reads locked until it ends), then the row-mode look-up and the fence.
          r = conn.run(wait_lock_, p, deadline);
          if (sql::says_true(r)) {
            r = conn.run(claim_, p, deadline);
            if (!r.empty() && !r[0].empty() && !r[0][0] && sw != nullptr) sw->rows_hold = true;
          } else {
            r.clear();  // not taken within the wait
          }
        } else {
          r = conn.run(lean ? lock_ : dialect_.acquire, p, deadline);
        }
      } catch (const sql::conflict_error& e) {
        if (!stopper || !stopper->fired()) {
          let_go_after_failure(conn, req.name, deadline);  // the session is clean again
          transient = e.what();
          conflict = true;
        }
      } catch (const sql::transient_error& e) {
        if (!stopper || !stopper->fired()) {
          let_go_after_failure(conn, req.name, deadline);
          transient = e.what();
        }
      } catch (...) {
        if (!stopper || !stopper->fired()) throw;  // a killed or cut-off wait: stopped below
      }
      stopped = stopper && stopper->fired();
    } catch (...) {
      c->kill();  // unknown state: ending the session frees anything it took
      throw;
    }
    // A deadlock or lock-wait timeout against a row-mode acquire of the name: busy (at the
    // deadline: not obtained in time). Other transient errors the core retries.
    if (conflict && !stopped) return std::nullopt;
    if (!transient.empty() && !stopped)
      throw connection_error("MySQL advisory acquire of '" + req.name +
                             "' hit a transient error: " + transient);
    if (stopped) {
      // Closed whatever the wait returned (a lock it just got goes with it): a kill still on
      // its way must meet no later statement of this session (wait_stopper.hpp).
      c->kill();
      return std::nullopt;
    }
    if (r.empty() || r[0].empty() || !r[0][0]) return std::nullopt;
    std::uint64_t fence = 0;
    try {
      fence = sql::decode_u64(r[0][0], "fence from sqlock_advisory_acquire");
    } catch (...) {
      c->kill();
      throw;
    }
    if (lean) {
      c->keep(req.name, {req.owner, fence, false, lock_name});
      recorder_.held({req.name, req.owner, req.holder, fence, session_id, clock::now()});
    } else {
      // No GET_LOCK name: routines of schema version 1 (a `sqlock migrate` of an older
      // library re-created them); the release then goes through sqlock_advisory_release.
      c->keep(req.name,
              {req.owner, fence, false, r[0].size() > 2 && r[0][2] ? *r[0][2] : std::string()});
    }
    lease_info l{req.name, req.owner, fence, c->token()};
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
  // Whether holds are taken with the lean pair: on MariaDB (its sequence gives the fences), not
  // on MySQL 8. Asked once per backend, on the first session used.
  bool lean_pair(sql::connection& c, steady_time deadline) {
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

  // Runs `op` (renew or release) for the hold `l` on the session carrying it; false when that
  // session no longer carries it for this owner. A session that fails is closed: its other
  // holds are lost (reported), this one's outcome is the caller's (false or the error).
  bool on_holding_session(const lease_info& l, steady_time deadline, bool releasing) {
    auto c = pool_.holding(l.state, l.name, l.owner, deadline);
    if (!c) return false;
    const std::string key = c->held(l.name)->key;
    const std::uint64_t fence = c->held(l.name)->fence;
    bool ok = false;
    try {
      sql::params p = params_for(l);
      const sql::operation* op = nullptr;
      if (key.empty()) {  // schema version 1's routines
        op = releasing ? &dialect_.release : &dialect_.renew;
      } else {
        op = releasing ? &unlock_ : &holding_;
        p.name = key;
        p.fence = static_cast<std::int64_t>(fence);
      }
      ok = sql::says_true(c->conn().run(*op, p, deadline));
    } catch (const connection_error&) {
      c->kill(l.name);       // GET_LOCK locks die with their session: never left held
      if (releasing) throw;  // the outcome is unknown (the server frees it anyway)
      return false;          // renew: the session is gone, so is the hold
    } catch (...) {
      c->kill(l.name);
      throw;
    }
    if (ok && !releasing) return true;
    if (!ok) recorder_.released(l.name, l.owner);
    c->forget(l.name);
    // The server says the session does not carry it: whatever it has is not ours any more.
    if (!ok && releasing) c->kill(l.name);
    return ok;
  }

  // After an acquire that failed with a transient error: lets go of the name's GET_LOCK lock
  // on the session if the failed call left it held. A deadlock inside a stored function (a
  // sub-statement: sqlock_advisory_take's locking read) rolls the transaction back without
  // running the function's handler, which would have let go; the session held no lock of the
  // name before the call (held() is checked first), so any it holds now is the failed call's.
  // A session that cannot answer is closed (connection_error: the caller kills it).
  void let_go_after_failure(sql::connection& conn, const std::string& name, steady_time deadline) {
    sql::params p;
    p.name = get_lock_name(name);
    conn.run(let_go_, p, std::max(deadline, clock::now() + let_go_bound));
  }

  // The lean pair (MariaDB) and its checks, on the GET_LOCK names of the name and the fence.
  // sqlock_advisory_take: sqlock_advisory_lock that also refuses a name a row mode holds
  // (schema version 5, sql/mysql/advisory_session.sql).
  const sql::operation lock_{"advisory_lock",
                             {"SELECT sqlock_advisory_take(:prefix, :name, :lease_ms)"}};
  // A wait (schema version 7): GET_LOCK alone, then, once it has the lock, the look-up of the
  // name's row-mode holds and the fence (sqlock_advisory_claim).
  const sql::operation wait_lock_{"advisory_wait", {"SELECT GET_LOCK(:prefix, :lease_ms / 1000)"}};
  const sql::operation claim_{"advisory_claim", {"SELECT sqlock_advisory_claim(:prefix, :name)"}};
  const sql::operation unlock_{
      "advisory_unlock", {"SELECT RELEASE_LOCK(:name), RELEASE_LOCK(CONCAT('sqlock!', :fence))"}};
  const sql::operation holding_{"advisory_holding",
                                {"SELECT COALESCE(IS_USED_LOCK(:name) = CONNECTION_ID() AND "
                                 "IS_USED_LOCK(CONCAT('sqlock!', :fence)) = CONNECTION_ID(), 0)"}};
  // Every level of the GET_LOCK lock :name this session holds given back (GET_LOCK nests on
  // MariaDB; each RELEASE_LOCK gives back one level; the rows are evaluated one by one).
  const sql::operation let_go_{
      "advisory_let_go",
      {"SELECT COUNT(*) FROM (SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 "
       "UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8) l "
       "WHERE IS_USED_LOCK(:name) = CONNECTION_ID() AND RELEASE_LOCK(:name)"}};
  const sql::operation record_{"advisory_record", {"CALL sqlock_advisory_record(:holds)"}};
  const sql::operation epoch_{"fence_epoch", {"CALL sqlock_fence_epoch_raise(@sqlock_epoch)"}};
  const options opts_;  // the URL's options: the read-only check and the diagnostics use them
  mysql_diagnostics diagnostics_{*this, opts_};
  sql::hold_recorder recorder_;  // before the sessions: their watcher's losses reach it
  std::atomic<int> flavor_{0};   // 0 = not known yet, 1 = MariaDB (lean pair), 2 = MySQL
  milliseconds wait_chunk_;
  sql::session_pool pool_;  // last, destroyed first: its watcher calls report_lost()
};

// The acquisition of one waiting request: attempts with its server_wait.
class server_acquisition final : public acquisition {
 public:
  server_acquisition(advisory_backend& b, lock_request req) : b_(b), req_(std::move(req)) {}
  std::optional<lease_info> attempt(steady_time deadline) override {
    auto r = b_.attempt_with(req_, deadline, &state_);
    listing_.after_attempt(r.has_value());
    return r;
  }
  void wait(steady_time until, const std::stop_token& stop) override { state_.wait(until, stop); }
  void cancel() noexcept override { listing_.leave(); }

 private:
  advisory_backend& b_;
  lock_request req_;
  server_wait state_;
  sql::wait_listing listing_{b_, req_};
};

std::unique_ptr<acquisition> advisory_backend::make_acquisition(const lock_request& req,
                                                                const wait_policy&) {
  return std::make_unique<server_acquisition>(*this, req);
}

}  // namespace

std::shared_ptr<backend> open_advisory(const options& o, std::string url_text,
                                       std::size_t statements,
                                       std::shared_ptr<sql::connection_counter> counter) {
  return std::make_shared<advisory_backend>(o, std::move(url_text), statements, std::move(counter));
}

}  // namespace sqlock::mysql::detail
