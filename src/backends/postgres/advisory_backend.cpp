// Advisory holds on the dedicated sessions of an sql::session_pool.
#include "advisory_backend.hpp"

#include <algorithm>

#include "lock_key.hpp"
#include "pooler.hpp"
#include "postgres_driver.hpp"
#include "sql/conflict_retry.hpp"
#include "sql/hold_recorder_json.hpp"
#include "sqlock/errors.hpp"

namespace sqlock::postgres {

namespace {

// Time the clean-up after a failed acquire may take past the caller's deadline.
constexpr milliseconds let_go_bound{1000};
// The parameters with the name's advisory key, which the exclusive pair takes from the client
// (advisory_lock_key / advisory_unlock_key, schema version 9).
sql::params keyed(sql::params p) {
  p.key = lock_key(p.name);
  return p;
}

// The lock sessions' way with a pooler: a proxy of undeclared pool mode is refused at connect.
pooling session_pooling(const options& o) {
  pooling p;
  p.unnamed = !o.prepare;
  p.refuse_proxy = o.pooler.empty();
  p.learn_server_process = true;  // recorded with each hold
  p.cancel = !through_pooler(o.pooler);
  return p;
}

}  // namespace

advisory_backend::advisory_backend(const std::string& conninfo, const std::string& shown,
                                   const options& o, sql::dialect d)
    : pg_backend(conninfo, shown, o, std::move(d)),
      wait_{"pg_advisory_wait",
            {"SELECT " + o.schema + ".advisory_lock_key(:key, :name, :owner, :holder, :lease_ms)"}},
      release_recorded_{
          "pg_advisory_release_recorded",
          {"SELECT " + o.schema + ".advisory_unlock_key(:key, :name, :owner, :fence, true)"}},
      record_{"pg_advisory_record",
              {"SELECT " + o.schema + ".advisory_record(CAST(:holds AS jsonb))"}},
      kinds_{{"pg_advisory_acquire_shared",
              {"SELECT fence, status FROM " + o.schema +
               ".acquire_advisory_shared(:name, :owner, :holder, :kind, :permits)"}},
             {"pg_advisory_wait_shared",
              {"SELECT fence, status FROM " + o.schema +
               ".acquire_advisory_shared(:name, :owner, :holder, :kind, :permits, :lease_ms)"}},
             {"pg_advisory_renew_shared",
              {"SELECT " + o.schema + ".renew_advisory_shared(:name, :owner)"}},
             {"pg_advisory_release_shared",
              {"SELECT " + o.schema + ".release_advisory_shared(:name, :owner)"}}},
      turns_(o.sessions),
      recorder_([this](const sql::hold_recorder::batch& b,
                       steady_time deadline) { record(b.records, deadline); },
                o.record_after, o.timeout),
      sessions_(
          o.sessions, o.waiters,
          [conninfo, t = o.timeout, counter = counter_,
           p = session_pooling(o)](steady_time deadline) {
            auto c = std::make_unique<pg_connection>(conninfo, t, -1, p, counter);
            c->connect(deadline);
            return c;
          },
          [this](const std::string& name, const std::string& owner) {
            recorder_.released(name, owner);
            report_lost(name, owner);
          }) {}

std::optional<lease_info> advisory_backend::one_attempt(const lock_request& req,
                                                        steady_time deadline, pg_acquisition* a) {
  try {
    return attempt(req, deadline, a);
  } catch (const sql::pool_busy&) {
    return std::nullopt;  // every session stayed busy: nothing was asked, the caller may wait
  }
}

std::optional<lease_info> advisory_backend::attempt(const lock_request& req, steady_time deadline,
                                                    pg_acquisition* w) {
  if (w && !w->first_attempt()) {
    // A waiting call found the lock busy before: wait inside the server if a waiter session
    // is free (not for a permit: that would wait for one of its N keys only), else make sure
    // releases of the name notify us before trying again.
    if (req.kind != lock_kind::permit && w->may_wait_in_server()) {
      if (auto sw = server_wait_within(deadline, io_timeout())) {
        if (auto c = sessions_.idle_waiter(deadline)) {
          w->waited_in_server();
          return wait_in_server(*c, req, *sw, deadline);
        }
      }
    }
    // On a lock session, not the engine's pool: waiting threads never open more connections.
    if (!register_waiter(*w, req, deadline,
                         [this](const sql::operation& op, const sql::params& p, steady_time d) {
                           auto c = sessions_.pick(d);
                           try {
                             c.conn().run(op, p, d);
                           } catch (const config_error&) {
                             throw;
                           } catch (const error&) {
                             c.kill();  // the session's state is unknown (see below)
                             throw;
                           }
                         }))
      return std::nullopt;
  }
  const auto p = keyed(params_for(req));
  const auto& op = req.kind == lock_kind::exclusive ? dialect_.acquire : kinds_.acquire;
  // Retried as the pooled engine retries its statements (conflict_retry).
  sql::conflict_retry conflicts_left(deadline);
  for (;;) {
    auto c = session_for(req, deadline);
    if (!c) return std::nullopt;
    if (auto h = c->held(req.name)) return lease_info{req.name, req.owner, h->fence, c->token()};
    try {
      return granted(*c, req, c->conn().run(op, p, exchange_bound(deadline, io_timeout())));
    } catch (const sql::transient_error&) {
      // A deadlock, serialization failure or lock timeout inside the function: a session-level
      // advisory lock it took stays taken through the rollback. Let go of it, then retry while
      // the deadline allows; at the deadline the name was not obtained in time.
      let_go_after_failure(*c, req, p, deadline);
      if (!conflicts_left.pause()) return std::nullopt;
    } catch (const config_error&) {
      throw;  // refused before anything changed (a bad name, a missing grant, another kind)
    } catch (const error&) {
      // Connection lost, timed out, or the function failed at an unknown point (a cancelled
      // statement can even skip its exception handler): the session might hold the lock with
      // no row recording it. End the session so that no lock stays held by mistake; its other
      // holds are reported lost, and the core retries a connection_error within the deadline.
      c->kill();
      throw;
    }
  }
}

void advisory_backend::let_go_after_failure(sql::session_pool::call& c, const lock_request& req,
                                            const sql::params& p, steady_time deadline) {
  // The session carried no lock of the name before the call (session_for, idle_waiter), so
  // every level of the name's key it holds now is the failed call's. For a permit request (one
  // of N keys) the session is closed instead: that ends whatever it holds.
  if (req.kind == lock_kind::permit) return c.kill();
  try {
    c.conn().run(req.kind == lock_kind::shared ? let_go_shared_ : let_go_, p,
                 std::max(deadline, std::chrono::steady_clock::now() + let_go_bound));
  } catch (const error&) {
    c.kill();  // no answer: closing the session frees the lock too
  }
}

std::optional<sql::session_pool::call> advisory_backend::session_for(const lock_request& req,
                                                                     steady_time deadline) {
  // An exclusive request needs look at one session only: another owner's hold of the name
  // there (of any kind) makes it busy anyway.
  const std::size_t tries = req.kind == lock_kind::exclusive ? 1 : turns_;
  for (std::size_t i = 0; i < tries; ++i) {
    auto c = sessions_.pick(deadline);
    auto h = c.held(req.name);
    if (!h || h->owner == req.owner) return c;
  }
  return std::nullopt;
}

std::optional<lease_info> advisory_backend::granted(sql::session_pool::call& c,
                                                    const lock_request& req, const sql::rows& r) {
  if (r.empty() || r[0].empty()) return std::nullopt;
  if (!r[0][0]) {
    if (r[0].size() > 1 && r[0][1] && r[0][1]->rfind("mismatch:", 0) == 0)
      sql::kind_mismatch(req, *r[0][1]);
    return std::nullopt;  // busy (or the server's lock_timeout)
  }
  auto fence = sql::decode_u64(r[0][0], "fence");
  const auto now = std::chrono::steady_clock::now();
  c.keep(req.name, {req.owner, fence, req.kind != lock_kind::exclusive, {}});
  if (req.kind == lock_kind::exclusive) {
    // advisory_lock() wrote nothing: the hold is recorded if it lasts (hold_recorder).
    recorder_.held(
        {req.name, req.owner, req.holder, fence, c.conn().session_id(steady_time::max()), now});
  }
  lease_info l{req.name, req.owner, fence, c.token()};
  // The hold lives as long as its session, from the grant: a wait in the server before it
  // (however much longer than the lease) takes nothing from the lease.
  l.sent = now;
  return l;
}

std::optional<lease_info> advisory_backend::wait_in_server(sql::session_pool::call& c,
                                                           const lock_request& req,
                                                           const server_wait& sw,
                                                           steady_time deadline) {
  auto p = keyed(params_for(req));
  p.lease_ms = sw.lock_timeout.count();  // :lease_ms carries the wait here
  const auto& op = req.kind == lock_kind::exclusive ? wait_ : kinds_.wait;
  auto r = run_server_wait(c, op, p, sw, deadline, req.stop,
                           [&] { let_go_after_failure(c, req, p, deadline); });
  if (!r) return std::nullopt;
  return granted(c, req, *r);
}

bool advisory_backend::renew(const lease_info& l, milliseconds, steady_time deadline) {
  auto c = sessions_.holding(l.state, l.name, l.owner, deadline);
  if (!c) {
    recorder_.released(l.name, l.owner);
    return false;  // the session died or the hold was forgotten
  }
  try {
    const auto& op = c->held(l.name)->shared ? kinds_.renew : dialect_.renew;
    bool ok =
        sql::says_true(c->conn().run(op, params_for(l), exchange_bound(deadline, io_timeout())));
    if (!ok) {
      c->forget(l.name);
      recorder_.released(l.name, l.owner);
    }
    return ok;
  } catch (const connection_error&) {
    recorder_.released(l.name, l.owner);
    c->kill(l.name);  // the session is gone or unknown: closing it ends the hold for sure
    return false;
  }
}

bool advisory_backend::release(const lease_info& l, steady_time deadline) {
  const bool recorded = recorder_.released(l.name, l.owner);
  auto c = sessions_.holding(l.state, l.name, l.owner, deadline);
  if (!c) return false;
  try {
    const auto& op = c->held(l.name)->shared ? kinds_.release
                     : recorded              ? release_recorded_
                                             : dialect_.release;
    auto p = keyed(params_for(l));
    p.fence = static_cast<std::int64_t>(l.fence);  // advisory_unlock ends the fence's pair too
    auto r = c->conn().run(op, p, exchange_bound(deadline, io_timeout()));
    c->forget(l.name);
    return sql::says_true(r);
  } catch (...) {
    // The outcome is unknown and a session lock must never stay held by mistake: end the
    // session, which frees its locks on the server; its other holds are reported lost.
    c->kill(l.name);
    throw;
  }
}

void advisory_backend::record(const std::vector<sql::hold_recorder::record>& batch,
                              steady_time deadline) {
  sql::params p;
  p.holds = sql::to_json(batch);
  run(record_, p, deadline);  // the engine's pool: transient errors retried, a broken link replaced
}

std::vector<lock_status> advisory_backend::list(std::string_view prefix) {
  recorder_.flush(admin_deadline());
  return pg_backend::list(prefix);
}

void advisory_backend::verify(steady_time deadline) {
  pg_backend::verify(deadline);
  // A first try_lock() has only wait_policy::min_attempt when it must also connect and
  // authenticate; connecting here, within the I/O timeout, spares it that.
  try {
    sessions_.open_next(exchange_bound(deadline, io_timeout()));
  } catch (const sql::server_full&) {
    // The server has no slot for it now: the first lock connects, waiting within its deadline.
  }
}

capabilities advisory_backend::caps() const noexcept {
  auto c = pg_backend::caps();
  c.session_bound = true;
  c.linger = false;  // an advisory hold ends with its session
  c.shared = true;
  c.permits = true;
  return c;
}

}  // namespace sqlock::postgres
