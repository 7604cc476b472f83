// Advisory holds on the dedicated sessions of a session_pool.
#include "advisory_backend.hpp"

#include <thread>

#include "connection.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/random.hpp"

namespace sqlock::postgres {

namespace {

// Backoff between retries of an acquire that met a deadlock or serialization failure inside
// the stored function (the pooled engine retries the same way).
constexpr milliseconds transient_initial{1};
constexpr milliseconds transient_cap{50};

}  // namespace

advisory_backend::advisory_backend(const std::string& conninfo, const std::string& shown,
                                   const options& o, sql::dialect d)
    : pg_backend(conninfo, shown, o, std::move(d)),
      sessions_(
          o.sessions,
          [conninfo, t = o.timeout](steady_time deadline) {
            auto c = std::make_unique<pg_connection>(conninfo, t);
            c->connect(deadline);
            return c;
          },
          [this](const std::string& name, const std::string& owner) { report_lost(name, owner); }) {
}

std::optional<lease_info> advisory_backend::try_acquire(const lock_request& req,
                                                        steady_time deadline, wait_state* ws) {
  attempt_starts(ws);
  const auto p = params_for(req);
  for (unsigned attempt = 0;; ++attempt) {
    auto c = sessions_.pick(deadline);
    if (auto h = c.held(req.name)) {
      // The session already holds the name: ours again (a retried call) or another owner's of
      // this backend (advisory locks stack within a session, so it counts as busy here).
      if (h->first != req.owner) return std::nullopt;
      return lease_info{req.name, req.owner, h->second, c.token()};
    }
    try {
      auto r = c.conn().run(dialect_.acquire, p, exchange_bound(deadline, io_timeout()));
      if (r.empty() || r[0].empty() || !r[0][0]) return std::nullopt;
      auto fence = sql::decode_u64(r[0][0], "fence");
      c.keep(req.name, req.owner, fence);
      return lease_info{req.name, req.owner, fence, c.token()};
    } catch (const sql::transient_error&) {
      auto pause = backoff_delay(attempt, transient_initial, transient_cap);
      if (std::chrono::steady_clock::now() + pause >= deadline) throw;
      std::this_thread::sleep_for(pause);
    } catch (const config_error&) {
      throw;  // refused before anything changed (a bad name, a missing grant)
    } catch (const error&) {
      // Connection lost, timed out, or the function failed at an unknown point (a cancelled
      // statement can even skip its exception handler): the session might hold the lock with
      // no row recording it. End the session so that no lock stays held by mistake; its other
      // holds are reported lost, and the core retries a connection_error within the deadline.
      c.kill();
      throw;
    }
  }
}

bool advisory_backend::renew(const lease_info& l, milliseconds, steady_time deadline) {
  auto c = sessions_.holding(l.state, l.name, l.owner, deadline);
  if (!c) return false;  // the session died or the hold was forgotten
  try {
    bool ok = sql::says_true(
        c->conn().run(dialect_.renew, params_for(l), exchange_bound(deadline, io_timeout())));
    if (!ok) c->forget(l.name);
    return ok;
  } catch (const connection_error&) {
    c->kill(l.name);  // the session is gone or unknown: closing it ends the hold for sure
    return false;
  }
}

bool advisory_backend::release(const lease_info& l, steady_time deadline) {
  auto c = sessions_.holding(l.state, l.name, l.owner, deadline);
  if (!c) return false;
  try {
    auto r = c->conn().run(dialect_.release, params_for(l), exchange_bound(deadline, io_timeout()));
    c->forget(l.name);
    return sql::says_true(r);
  } catch (...) {
    // The outcome is unknown and a session lock must never stay held by mistake: end the
    // session, which frees its locks on the server; its other holds are reported lost.
    c->kill(l.name);
    throw;
  }
}

void advisory_backend::verify(steady_time deadline) {
  pg_backend::verify(deadline);
  // A first try_lock() has only wait_policy::min_attempt when it must also connect and
  // authenticate; connecting here, within the I/O timeout, spares it that.
  sessions_.open_next(exchange_bound(deadline, io_timeout()));
}

capabilities advisory_backend::caps() const noexcept {
  auto c = pg_backend::caps();
  c.session_bound = true;
  c.linger = false;  // an advisory hold ends with its session
  return c;
}

}  // namespace sqlock::postgres
