// The peers' GET_LOCK locks on sessions of their own (see peer_get_lock.hpp).
#include "peer_get_lock.hpp"

#include "dialect.hpp"
#include "galera.hpp"
#include "lock_session.hpp"
#include "peer_lock_name.hpp"
#include "sql/connection_budget.hpp"
#include "sql/session_pool.hpp"
#include "sqlock/errors.hpp"

namespace sqlock::mysql::detail {

namespace {

sql::dialect named(const options& o) {
  sql::dialect d;
  d.kind = "mysql";
  d.mode = o.compat;
  return d;
}

class peer_get_lock final : public sql::engine_backend {
 public:
  // The budget: the sessions that carry the peer's locks, then the statement pool.
  peer_get_lock(const options& o, std::string url_text, const sql::budget_split& budget,
                std::shared_ptr<sql::connection_counter> counter)
      : engine_backend(
            sql_bundle(), named(o), [o, counter] { return open_connection(o, counter); },
            std::move(url_text), budget.statements, true, counter),
        raw_(o.compat == "raw"),
        where_(server_address(o)),
        pool_(
            o.sessions, 0, lock_sessions(o, counter),
            [this](const std::string& name, const std::string& owner) { report_lost(name, owner); },
            sql::session_spread::first_free) {
    set_io_timeout(o.timeout);
    set_release_in_background(o.async_release);
  }

  std::optional<lease_info> attempt(const lock_request& req, steady_time deadline,
                                    sql::engine_acquisition*) override {
    const auto lock_name = get_lock_name(req.name);  // before anything is sent
    std::optional<sql::session_pool::call> c;
    try {
      c.emplace(pool_.pick(deadline));
    } catch (const sql::pool_busy&) {
      return std::nullopt;  // every session stayed busy: nothing was asked
    }
    if (const auto* h = c->held(req.name)) {
      // This session holds the name (GET_LOCK would nest): this owner's hold again, or busy.
      if (h->owner != req.owner) return std::nullopt;
      return granted(req, c->token());
    }
    sql::params p;
    p.name = lock_name;
    sql::rows r;
    try {
      r = c->conn().run(take_, p, deadline);
    } catch (...) {
      c->kill();  // unknown state: ending the session frees anything it took
      throw;
    }
    if (!sql::says_true(r)) return std::nullopt;
    c->keep(req.name, {req.owner, 0, false, lock_name});
    return granted(req, c->token());
  }

  bool renew(const lease_info& l, milliseconds, steady_time deadline) override {
    return run_on_session(l, check_, deadline, false);
  }

  bool release(const lease_info& l, steady_time deadline) override {
    return run_on_session(l, release_, deadline, true);
  }

  std::vector<lock_status> list(std::string_view prefix) override {
    sql::rows on;
    with_connection([&](sql::connection& c) { on = c.query("SELECT @@performance_schema"); },
                    admin_deadline());
    if (on.empty() || !sql::truthy(on[0][0]))
      throw unsupported(
          "listing the GET_LOCK locks of others needs performance_schema=ON on "
          "the server (it is off)");
    sql::params p;
    p.prefix = std::string(prefix);
    sql::rows rows;
    try {
      rows = run(list_, p, admin_deadline());
    } catch (const backend_error& e) {
      if (e.code() != "1142" && e.code() != "42000") throw;  // not a refused SELECT
      throw backend_error(
          "listing the GET_LOCK locks of others needs SELECT on "
          "performance_schema.metadata_locks and performance_schema.threads for this user "
          "(docs/interop.md): " +
              std::string(e.what()),
          e.code());
    }
    std::vector<lock_status> out;
    for (const auto& r : rows) {
      lock_status s;
      s.name = r[0].value_or("");
      s.mode = dialect_.mode;
      s.holder = "connection " + r[1].value_or("?") + " (" + r[2].value_or("") + ")";
      out.push_back(std::move(s));
    }
    return out;
  }

  // No forced release (the holds are the peer's session locks: KILL the holding connection to
  // free one), no audit trail, nothing to sweep.
  hold_breaker* breaker() noexcept override { return nullptr; }
  audit_trail* audit() noexcept override { return nullptr; }
  expiry_sweeper* sweeper() noexcept override { return nullptr; }
  void verify(steady_time deadline) override {
    refuse_galera(*this, where_, "compat=" + dialect_.mode, deadline);
  }
  schema_owner* schema() noexcept override { return nullptr; }  // the peer's: none of sqlock's
  std::string kind() const override { return "mysql"; }

  capabilities caps() const noexcept override {
    capabilities c;
    c.fencing = c.fencing_safe = false;  // the peer keeps no token
    c.session_bound = true;
    c.linger = false;  // the hold ends with its session
    // The peer's GET_LOCK name is all the server keeps: no holder text (list() shows the holding
    // connection instead; an election's leader cannot be read) and no owner token.
    c.holder_text = false;
    c.listed_as_taken = false;
    c.cross_process = true;
    return c;
  }

 private:
  std::string get_lock_name(const std::string& name) const {
    return raw_ ? raw_get_lock_name(name) : distributedlock_get_lock_name(name);
  }

  static lease_info granted(const lock_request& req, std::shared_ptr<void> s) {
    lease_info l{req.name, req.owner, 0, std::move(s)};
    l.sent = std::chrono::steady_clock::now();  // no lease on the server: it runs from the grant
    return l;
  }

  // Runs `op` on the session of `l` if it still carries the hold; forgets the hold after a
  // release, or when the server says it is gone.
  bool run_on_session(const lease_info& l, const sql::operation& op, steady_time deadline,
                      bool releasing) {
    auto c = pool_.holding(l.state, l.name, l.owner, deadline);
    if (!c) return false;
    sql::params p;
    p.name = c->held(l.name)->key;
    try {
      const bool ok = sql::says_true(c->conn().run(op, p, deadline));
      if (releasing || !ok) c->forget(l.name);
      return ok;
    } catch (...) {
      c->kill(l.name);  // a GET_LOCK lock is never left held by mistake
      if (releasing) throw;
      return false;
    }
  }

  const bool raw_;
  const std::string where_;  // the server, named in the Galera refusal
  const sql::operation take_{"peer_get_lock", {"SELECT GET_LOCK(:name, 0)"}};
  const sql::operation check_{"peer_is_used_lock",
                              {"SELECT IS_USED_LOCK(:name) = CONNECTION_ID()"}};
  const sql::operation release_{"peer_release_lock", {"SELECT RELEASE_LOCK(:name) = 1"}};
  const sql::operation list_{
      "peer_list",
      {"SELECT m.OBJECT_NAME, t.PROCESSLIST_ID, t.PROCESSLIST_USER FROM "
       "performance_schema.metadata_locks m LEFT JOIN performance_schema.threads t ON "
       "t.THREAD_ID = m.OWNER_THREAD_ID WHERE m.OBJECT_TYPE = 'USER LEVEL LOCK' AND "
       "m.LOCK_STATUS = 'GRANTED' AND LEFT(m.OBJECT_NAME, CHAR_LENGTH(:prefix)) = :prefix "
       "ORDER BY m.OBJECT_NAME"}};
  sql::session_pool pool_;  // last, destroyed first: its watcher calls report_lost()
};

}  // namespace

std::shared_ptr<backend> open_peer_get_lock(const options& o, std::string url_text) {
  const auto budget = sql::split_budget("MySQL", o.max_connections, o.pool,
                                        {{o.sessions, std::to_string(o.sessions) + " sessions"}});
  return std::make_shared<peer_get_lock>(o, std::move(url_text), budget,
                                         std::make_shared<sql::connection_counter>());
}

}  // namespace sqlock::mysql::detail
