// The PostgreSQL checks of `sqlock doctor`: one line per finding, judged for the URL's mode.
#include "diagnostics.hpp"

#include <libpq-fe.h>

#include <chrono>
#include <cmath>

#include "budget.hpp"
#include "libpq_connection.hpp"
#include "pooler.hpp"
#include "sqlock/errors.hpp"

namespace sqlock::postgres {

namespace {

using st = finding_status;

std::string cell(const sql::rows& r, std::size_t row, std::size_t col) {
  if (r.size() <= row || r[row].size() <= col || !r[row][col]) return {};
  return *r[row][col];
}

long long number(const sql::rows& r, std::size_t row, std::size_t col) {
  auto v = cell(r, row, col);
  return v.empty() ? 0 : std::stoll(v);
}

// The value of libpq keyword `key` in `conninfo` ("" when unset).
std::string conninfo_value(const std::string& conninfo, const char* key) {
  std::string out;
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
  if (err) PQfreemem(err);
  for (auto* o = opts; o && o->keyword; ++o)
    if (std::string(o->keyword) == key && o->val) out = o->val;
  if (opts) PQconninfoFree(opts);
  return out;
}

}  // namespace

pg_diagnostics::pg_diagnostics(sql::engine_backend& engine, std::string conninfo, const options& o)
    : engine_(engine), conninfo_(std::move(conninfo)), o_(o) {}

std::vector<finding> pg_diagnostics::check(steady_time deadline) {
  const auto bound = [&] { return exchange_bound(deadline, o_.timeout); };
  libpq_connection l(conninfo_, bound());  // connection_error / auth_error end the report
  std::vector<finding> out;
  run_check(out, "server", [&] { server(l, bound(), out); });
  run_check(out, "role", [&] { role(l, bound(), out); });
  run_check(out, "pooler", [&] { pooler(l, bound(), out); });
  run_check(out, "schema", [&] { schema(l, bound(), out); });
  run_check(out, "clock", [&] { clock(l, bound(), out); });
  run_check(out, "connections", [&] { budget(l, bound(), out); });
  run_check(out, "timeouts", [&] { timeouts(l, bound(), out); });
  return out;
}

void pg_diagnostics::server(libpq_connection& l, steady_time bound, std::vector<finding>& out) {
  auto r = l.run_simple("SELECT pg_catalog.version()", bound, "version query failed");
  const auto version = cell(r, 0, 0);
  const auto at = " at " + l.address();
  if (version.find("CockroachDB") != std::string::npos) {
    // Its pg_advisory_lock functions exist for compatibility and lock nothing.
    out.push_back({"server", o_.mode == "advisory" ? st::unsafe : st::warn,
                   version + at +
                       ": CockroachDB's advisory lock functions are no-ops, so advisory mode "
                       "does not exclude; the row modes are not tested there"});
    return;
  }
  out.push_back({"server", st::ok, version.substr(0, version.find(" on ")) + at});
}

void pg_diagnostics::role(libpq_connection& l, steady_time bound, std::vector<finding>& out) {
  auto r = l.run_simple(
      "SELECT pg_catalog.pg_is_in_recovery(), "
      "pg_catalog.current_setting('default_transaction_read_only'), "
      "(SELECT count(*) FROM pg_catalog.pg_stat_replication), "
      "(SELECT count(*) FROM pg_catalog.pg_stat_replication "
      " WHERE sync_state IN ('sync', 'quorum')), "
      "pg_catalog.current_setting('synchronous_standby_names'), "
      "(SELECT count(*) FROM pg_catalog.pg_stat_replication WHERE sync_state IS NULL)",
      bound, "role query failed");
  const auto hint =
      ": point the URL at the primary, or list every host with target_session_attrs=read-write";
  if (sql::truthy(cell(r, 0, 0))) {
    out.push_back({"role", st::unsafe,
                   "the server at " + l.address() + " is a hot standby (read-only)" + hint});
    return;
  }
  if (cell(r, 0, 1) == "on") {
    out.push_back({"role", st::unsafe,
                   "the server at " + l.address() +
                       " is read-only (default_transaction_read_only = on)" + hint});
    return;
  }
  const auto standbys = number(r, 0, 2), sync = number(r, 0, 3), hidden = number(r, 0, 5);
  const auto sync_names = cell(r, 0, 4);
  std::string msg = "primary (accepts writes)";
  auto status = st::ok;
  if (standbys > 0 && sync == 0 && hidden > 0 && !sync_names.empty()) {
    // A role without pg_read_all_stats sees no sync_state (as a Patroni cluster's app role).
    msg += ", " + std::to_string(standbys) +
           " streaming standby(s), synchronous_standby_names = '" + sync_names +
           "' (which are synchronous is hidden from this role: pg_read_all_stats)";
  } else if (standbys > 0) {
    msg += ", " + std::to_string(standbys) + " streaming standby(s), " + std::to_string(sync) +
           " synchronous";
    if (sync == 0 && o_.mode != "advisory") {
      status = st::warn;
      msg +=
          ": a failover to an asynchronous standby may lose the last holds (a name held twice "
          "for up to a lease) and the last fences; the fence epoch still rises there";
    }
  }
  const auto hosts = conninfo_value(conninfo_, "host");
  const auto attrs = conninfo_value(conninfo_, "target_session_attrs");
  if (hosts.find(',') != std::string::npos && attrs != "read-write" && attrs != "primary") {
    status = st::warn;
    msg +=
        "; the URL lists several hosts without target_session_attrs=read-write, so a "
        "connection may reach a standby";
  }
  out.push_back({"role", status, msg});
}

void pg_diagnostics::pooler(libpq_connection& l, steady_time bound, std::vector<finding>& out) {
  const int first = server_process(l, bound);
  const bool declared = through_pooler(o_.pooler);
  if (first == l.server_pid()) {
    out.push_back({"pooler", declared ? st::warn : st::ok,
                   declared ? "pooler=" + o_.pooler +
                                  " is declared, but the connection reaches the server "
                                  "directly (its backend key is the server process's)"
                            : "none: a direct connection (the backend key is the server "
                              "process's)"});
    return;
  }
  // A proxy: two clients that meet one server session prove that sessions are shared
  // (transaction or statement pooling); in session pooling the first client keeps its own.
  libpq_connection other(conninfo_, bound);
  bool shared = false;
  for (int i = 0; i < 3 && !shared; ++i)
    shared = server_process(other, bound) == server_process(l, bound);
  std::string detected = "session";
  if (shared) {
    detected = "transaction";
    try {  // statement pooling refuses a transaction block
      other.run_simple("BEGIN", bound, "BEGIN");
      other.run_simple("SELECT 1", bound, "SELECT");
      other.run_simple("COMMIT", bound, "COMMIT");
    } catch (const error&) {
      detected = "statement";
    }
  }
  std::string msg =
      "a proxy or pooler (the backend key differs from the server process) in " + detected +
      " pooling" +
      (shared
           ? " (two clients shared one server session" +
                 std::string(detected == "statement" ? ", a transaction block was refused)" : ")")
           : " (each client kept its own server session)");
  msg += declared ? "; declared pooler=" + o_.pooler : "; not declared in the URL";
  auto status = st::ok;
  if (o_.mode == "advisory") {
    if (detected != "session") {
      status = st::unsafe;
      msg +=
          ": advisory holds belong to a server session, which this pooler hands to other "
          "clients; use mode=pessimistic or optimistic through it";
    } else if (o_.pooler != "session") {
      status = st::error;
      msg += ": advisory mode refuses an undeclared proxy: add pooler=session to the URL";
    }
  } else if (declared && moves_sessions(o_.pooler) != (detected != "session")) {
    status = st::warn;
    msg += ": the declared pool mode differs from what was seen";
  } else {
    msg += detected == "session" ? ": every mode works"
                                 : ": the row modes work (unnamed statements, waiters poll "
                                   "unless listen_host reaches the server)";
  }
  out.push_back({"pooler", status, msg});
}

void pg_diagnostics::schema(libpq_connection& l, steady_time bound, std::vector<finding>& out) {
  int version = 0;
  engine_.with_connection(
      [&](sql::connection& c) { version = sql::schema_version(c, engine_.get_dialect(), bound); },
      bound);
  const int latest = sql::latest_version(engine_.get_bundle());
  if (version < latest) {
    out.push_back({"schema", st::error,
                   "schema " + o_.schema + " at version " + std::to_string(version) +
                       ", this build needs " + std::to_string(latest) +
                       ": run `sqlock migrate` as the schema's owner"});
    return;
  }
  // The schema and role names passed make_dialect()'s identifier checks: safe to quote as
  // literals. The functions the execute role is granted (the API; internal helpers are not).
  const auto role = o_.execute_role.empty() ? o_.schema + "_execute" : o_.execute_role;
  auto r = l.run_simple(
      "SELECT count(*), string_agg(p.proname, ', ' ORDER BY p.proname) "
      "FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace "
      "WHERE n.nspname = '" +
          o_.schema + "' AND EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = '" + role +
          "') AND CASE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = '" + role +
          "') THEN pg_catalog.has_function_privilege('" + role +
          "', p.oid, 'EXECUTE') ELSE false END "
          "AND NOT pg_catalog.has_function_privilege(p.oid, 'EXECUTE')",
      bound, "grant query failed");
  const auto missing = number(r, 0, 0);
  if (missing > 0) {
    out.push_back({"schema", st::error,
                   "schema " + o_.schema + " at version " + std::to_string(version) +
                       ", but this role may not EXECUTE " + std::to_string(missing) +
                       " of its functions (" + cell(r, 0, 1).substr(0, 200) + "): GRANT " +
                       o_.schema + "_execute TO <role>"});
    return;
  }
  out.push_back({"schema", st::ok,
                 "schema " + o_.schema + " at version " + std::to_string(version) +
                     " (the latest), EXECUTE granted on its functions"});
}

void pg_diagnostics::clock(libpq_connection& l, steady_time bound, std::vector<finding>& out) {
  // The one wall-clock reading of the library: the report's, never a lease's.
  const auto before = std::chrono::system_clock::now();
  auto r = l.run_simple("SELECT extract(epoch FROM pg_catalog.clock_timestamp())::text", bound,
                        "clock query failed");
  const auto after = std::chrono::system_clock::now();
  out.push_back(clock_finding("clock", before, after, std::stod(cell(r, 0, 0)),
                              "leases run on the server's clock alone, an offset shows only in "
                              "the times `sqlock list` prints"));
}

void pg_diagnostics::budget(libpq_connection& l, steady_time bound, std::vector<finding>& out) {
  auto r = l.run_simple(
      "SELECT pg_catalog.current_setting('max_connections')::int, "
      "pg_catalog.current_setting('superuser_reserved_connections')::int, "
      "(SELECT count(*) FROM pg_catalog.pg_stat_activity WHERE backend_type = 'client backend'), "
      "(SELECT rolconnlimit FROM pg_catalog.pg_roles WHERE rolname = current_user), "
      "(SELECT count(*) FROM pg_catalog.pg_stat_activity WHERE usename = current_user), "
      "(SELECT datconnlimit FROM pg_catalog.pg_database WHERE datname = current_database())",
      bound, "connection query failed");
  const auto need = static_cast<long long>(split_budget(o_).total);
  const auto max = number(r, 0, 0), reserved = number(r, 0, 1), used = number(r, 0, 2);
  const auto role_limit = number(r, 0, 3), role_used = number(r, 0, 4);
  const auto db_limit = number(r, 0, 5);
  auto free = max - reserved - used;
  std::string msg = "this client opens up to " + std::to_string(need) + " connections (" +
                    (o_.max_connections ? "max_connections=" + std::to_string(need) + " in the URL"
                                        : std::string("the default budget")) +
                    "); the server has " + std::to_string(max) + " max_connections, " +
                    std::to_string(reserved) + " reserved, " + std::to_string(used) +
                    " in use: " + std::to_string(free) + " free";
  if (role_limit >= 0) {
    free = std::min(free, role_limit - role_used);
    msg += "; the role's CONNECTION LIMIT " + std::to_string(role_limit) + " (" +
           std::to_string(role_used) + " in use)";
  }
  if (db_limit >= 0) msg += "; the database's CONNECTION LIMIT " + std::to_string(db_limit);
  if (through_pooler(o_.pooler) || server_process(l, bound) != l.server_pid())
    msg += "; through a pooler its pool size bounds the server sessions instead";
  const bool short_of = need > free;
  if (short_of) msg += ": fewer free than this client may open (it waits for a slot, then fails)";
  out.push_back({"connections", short_of ? st::warn : st::ok, msg});
}

void pg_diagnostics::timeouts(libpq_connection& l, steady_time bound, std::vector<finding>& out) {
  auto r = l.run_simple(
      "SELECT name, setting || coalesce(unit, ''), source FROM pg_catalog.pg_settings "
      "WHERE name IN ('idle_session_timeout', 'idle_in_transaction_session_timeout', "
      "'statement_timeout', 'lock_timeout', 'transaction_timeout') AND setting <> '0' "
      "ORDER BY name",
      bound, "timeout query failed");
  if (r.empty()) {
    out.push_back({"timeouts", st::ok,
                   "no idle_session_timeout, idle_in_transaction_session_timeout, "
                   "statement_timeout or lock_timeout set for this role and database"});
    return;
  }
  std::string set;
  for (std::size_t i = 0; i < r.size(); ++i)
    set += (set.empty() ? "" : ", ") + cell(r, i, 0) + "=" + cell(r, i, 1) + " (" + cell(r, i, 2) +
           ")";
  if (moves_sessions(o_.pooler)) {
    out.push_back({"timeouts", st::warn,
                   set + ": through " + o_.pooler +
                       " pooling they apply to sqlock's statements too (a session setting "
                       "does not stay with the client)"});
    return;
  }
  out.push_back({"timeouts", st::ok, set + ": overridden by sqlock's sessions"});
}

}  // namespace sqlock::postgres
