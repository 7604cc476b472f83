// The peers' advisory locks on dedicated sessions (see peer_advisory.hpp).
#include "peer_advisory.hpp"

#include "pooler.hpp"
#include "postgres_driver.hpp"
#include "postgres_wait.hpp"
#include "sqlock/errors.hpp"

namespace sqlock::postgres {

namespace {

// A dialect that names the layout (kind, mode): every statement is this backend's own.
sql::dialect named(const options& o) {
  sql::dialect d;
  d.kind = "postgresql";
  d.mode = o.compat;
  return d;
}

options without_listener(options o) {
  o.listen = false;  // the peer notifies nobody: waiters wait inside the server, or back off
  return o;
}

// The arguments of a key: one bigint, or its two halves as ints (pg_locks: objsubid 1 or 2).
const char* const bigint_arg = "CAST(:key AS bigint)";
const char* const pair_args =
    "CAST(CAST(:key AS bigint) >> 32 AS int), CAST((CAST(:key AS bigint) << 32) >> 32 AS int)";

}  // namespace

peer_advisory_backend::peer_advisory_backend(const std::string& conninfo, const std::string& shown,
                                             const options& o)
    : pg_backend(conninfo, shown, without_listener(o), named(o)),
      raw_(o.compat == "raw"),
      allow_hashing_(o.allow_hashing),
      ping_{"peer_ping", {"SELECT true"}},
      list_{"peer_list",
            {"SELECT l.classid, l.objid, l.objsubid, l.mode, l.pid, a.application_name, "
             "to_char(a.backend_start AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') "
             "FROM pg_catalog.pg_locks l LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = "
             "l.pid WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid "
             "FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database()) ORDER "
             "BY l.classid, l.objid, l.pid"}},
      sessions_(
          o.sessions, o.waiters,
          [conninfo, t = o.timeout, counter = counter_, p = !o.prepare](steady_time deadline) {
            pooling pl;
            pl.unnamed = p;
            pl.refuse_proxy = true;  // a pooler would move the session and its locks
            auto c = std::make_unique<pg_connection>(conninfo, t, -1, pl, counter);
            c->connect(deadline);
            return c;
          },
          [this](const std::string& name, const std::string& owner) { report_lost(name, owner); }) {
  for (int lock = 0; lock < 2; ++lock)
    for (int pair = 0; pair < 2; ++pair)
      for (int shared = 0; shared < 2; ++shared) {
        std::string fn = std::string(lock ? "pg_try_advisory_lock" : "pg_advisory_unlock") +
                         (shared ? "_shared" : "");
        ops_[lock][pair][shared] = {
            "peer_" + fn + (pair ? "_pair" : ""),
            {"SELECT pg_catalog." + fn + "(" + (pair ? pair_args : bigint_arg) + ")"}};
      }
  // The wait inside the server, as the peer's own blocking acquire waits (in the server's queue,
  // where a waiting writer holds off new readers): lock_timeout for this statement only, set
  // first (the materialized CTE is read before the lock is asked for). A client gone meanwhile
  // is noticed within 100 ms by the session's client_connection_check_interval
  // (session_settings.hpp).
  for (int pair = 0; pair < 2; ++pair)
    for (int shared = 0; shared < 2; ++shared) {
      const std::string fn = std::string("pg_advisory_lock") + (shared ? "_shared" : "");
      waits_[pair][shared] = {
          "peer_wait_" + fn + (pair ? "_pair" : ""),
          {"WITH s AS MATERIALIZED (SELECT pg_catalog.set_config('lock_timeout', "
           "CAST(CAST(:lease_ms AS bigint) AS text) || 'ms', true)) "
           "SELECT pg_catalog." +
           fn + "(" + (pair ? pair_args : bigint_arg) + ") FROM s"}};
    }
}

advisory_key peer_advisory_backend::key_of(std::string_view name) const {
  return raw_ ? raw_key(name) : distributedlock_key(name, allow_hashing_);
}

const sql::operation& peer_advisory_backend::op(bool lock, bool pair, bool shared) const {
  return ops_[lock][pair][shared];
}

std::optional<lease_info> peer_advisory_backend::one_attempt(const lock_request& req,
                                                             steady_time deadline,
                                                             pg_acquisition* a) {
  const auto key = key_of(req.name);  // before anything is sent
  const bool shared = req.kind == lock_kind::shared;
  if (a && !a->first_attempt() && a->may_wait_in_server()) {
    // A waiting call found the lock busy before: wait inside the server if a waiter session is
    // free, else try again after the core's backoff.
    if (auto sw = server_wait_within(deadline, io_timeout())) {
      if (auto w = sessions_.idle_waiter(deadline)) {
        a->waited_in_server();
        return wait_in_server(*w, req, key, *sw, deadline);
      }
    }
  }
  std::optional<sql::session_pool::call> c;
  try {
    c.emplace(sessions_.pick(deadline));
  } catch (const sql::pool_busy&) {
    return std::nullopt;
  }
  if (auto held = c->held(req.name)) {
    // The server would grant this session the key again: one hold of a name per session.
    if (held->owner != req.owner) return std::nullopt;
    lease_info l{req.name, req.owner, 0, c->token()};  // a retried call finds its hold
    l.sent = std::chrono::steady_clock::now();
    return l;
  }
  sql::params p;
  p.key = key.value;
  try {
    if (!sql::says_true(
            c->conn().run(op(true, key.pair, shared), p, exchange_bound(deadline, io_timeout()))))
      return std::nullopt;
  } catch (const config_error&) {
    throw;
  } catch (...) {
    c->kill();  // the outcome is unknown: closing the session frees whatever it took
    throw;
  }
  c->keep(req.name, {req.owner, 0, shared, {}});
  lease_info l{req.name, req.owner, 0, c->token()};
  l.sent = std::chrono::steady_clock::now();  // no lease on the server: it runs from the grant
  return l;
}

std::optional<lease_info> peer_advisory_backend::wait_in_server(sql::session_pool::call& c,
                                                                const lock_request& req,
                                                                const advisory_key& key,
                                                                const server_wait& sw,
                                                                steady_time deadline) {
  const bool shared = req.kind == lock_kind::shared;
  sql::params p;
  p.key = key.value;
  p.lease_ms = sw.lock_timeout.count();  // :lease_ms carries the wait here
  // A waiter session holds nothing a deadlock could involve, and a lock timeout takes nothing:
  // after a conflict there is nothing to give back.
  if (!run_server_wait(c, waits_[key.pair][shared], p, sw, deadline, req.stop, [] {}))
    return std::nullopt;
  c.keep(req.name, {req.owner, 0, shared, {}});
  lease_info l{req.name, req.owner, 0, c.token()};
  l.sent = std::chrono::steady_clock::now();  // no lease on the server: it runs from the grant
  return l;
}

bool peer_advisory_backend::renew(const lease_info& l, milliseconds, steady_time deadline) {
  auto c = sessions_.holding(l.state, l.name, l.owner, deadline);
  if (!c) return false;  // the session died
  try {
    c->conn().run(ping_, {}, exchange_bound(deadline, io_timeout()));
    return true;
  } catch (const connection_error&) {
    c->kill(l.name);  // gone or unknown: closing it ends the hold for sure
    return false;
  }
}

bool peer_advisory_backend::release(const lease_info& l, steady_time deadline) {
  auto c = sessions_.holding(l.state, l.name, l.owner, deadline);
  if (!c) return false;
  sql::params p;
  const auto key = key_of(l.name);
  p.key = key.value;
  try {
    auto r = c->conn().run(op(false, key.pair, c->held(l.name)->shared), p,
                           exchange_bound(deadline, io_timeout()));
    c->forget(l.name);
    return sql::says_true(r);
  } catch (...) {
    c->kill(l.name);  // a session lock must never stay held by mistake
    throw;
  }
}

std::vector<lock_status> peer_advisory_backend::list(std::string_view prefix) {
  std::vector<lock_status> out;
  for (const auto& r : run(list_, {}, admin_deadline())) {
    if (r.size() < 7 || !r[0] || !r[1] || !r[2]) continue;
    const auto hi = static_cast<std::uint32_t>(std::stoul(*r[0]));
    const auto lo = static_cast<std::uint32_t>(std::stoul(*r[1]));
    const advisory_key k{static_cast<std::int64_t>((std::uint64_t{hi} << 32) | lo), *r[2] == "2"};
    lock_status s;
    s.name = raw_ ? raw_name(k) : distributedlock_name(k);
    if (s.name.compare(0, prefix.size(), prefix) != 0) continue;
    s.mode = dialect_.mode;
    s.kind = r[3] && *r[3] == "ShareLock" ? lock_kind::shared : lock_kind::exclusive;
    s.holder = "pid " + r[4].value_or("?") + " (" + r[5].value_or("") + ")";
    s.acquired_at = "";  // pg_locks does not say when; r[6] is when the session started
    out.push_back(std::move(s));
  }
  return out;
}

capabilities peer_advisory_backend::caps() const noexcept {
  auto c = pg_backend::caps();
  c.fencing = c.fencing_safe = false;  // the peer keeps no token
  c.session_bound = true;
  c.linger = false;  // the hold ends with its session
  c.shared = true;   // pg_advisory_lock_shared, as PostgresDistributedReaderWriterLock takes
  c.permits = false;
  // pg_locks keeps only the key: no holder text (list() shows the holding session instead; an
  // election's leader cannot be read), no owner token, and a name only where the key reverses.
  c.holder_text = false;
  c.listed_as_taken = false;
  return c;
}

void peer_advisory_backend::verify(steady_time deadline) {
  try {
    sessions_.open_next(exchange_bound(deadline, io_timeout()));
  } catch (const sql::server_full&) {
    // The server has no slot for it now: the first lock connects, waiting within its deadline.
  }
}

}  // namespace sqlock::postgres
