// The MySQL/MariaDB checks of `sqlock doctor`: server and version, read-only or writable,
// Galera and Group Replication (where GET_LOCK is node-local), schema version, clock offset,
// connections against max_connections, and the global timeouts sqlock's sessions override.
#include "diagnostics.hpp"

#include <chrono>
#include <cmath>

#include "budget.hpp"
#include "galera.hpp"
#include "mysql_driver.hpp"
#include "sqlock/errors.hpp"

namespace sqlock::mysql::detail {

namespace {

using st = finding_status;

std::string cell(const sql::rows& r, std::size_t row = 0, std::size_t col = 0) {
  if (r.size() <= row || r[row].size() <= col || !r[row][col]) return {};
  return *r[row][col];
}

long long number(const sql::rows& r, std::size_t row = 0, std::size_t col = 0) {
  auto v = cell(r, row, col);
  return v.empty() ? 0 : std::stoll(v);
}

}  // namespace

mysql_diagnostics::mysql_diagnostics(sql::engine_backend& engine, const options& o)
    : engine_(engine), o_(o) {}

sql::rows mysql_diagnostics::ask(const std::string& text, steady_time bound) {
  sql::rows r;
  engine_.with_connection([&](sql::connection& c) { r = c.query(text, bound); }, bound);
  return r;
}

// A server variable, or nullopt when the server has none of that name (error 1193).
std::optional<std::string> mysql_diagnostics::variable(const std::string& name, steady_time bound) {
  try {
    return cell(ask("SELECT @@global." + name, bound));
  } catch (const backend_error&) {
    return std::nullopt;
  }
}

std::vector<finding> mysql_diagnostics::check(steady_time deadline) {
  const auto bound = [&] { return exchange_bound(deadline, o_.timeout); };
  std::vector<finding> out;
  const auto where = server_address(o_);
  const bool advisory = o_.mode == "advisory";
  const bool get_lock = takes_get_lock(o_);
  run_check(out, "server", [&] {
    auto r = ask("SELECT VERSION(), @@version_comment", bound());
    out.push_back({"server", st::ok, cell(r) + " (" + cell(r, 0, 1) + ") at " + where});
  });
  run_check(out, "role", [&] {
    if (variable("read_only", bound()).value_or("0") == "1") {
      out.push_back({"role", st::unsafe, read_only_message(where, "is read-only")});
      return;
    }
    out.push_back({"role", st::ok, "writable (read_only = OFF)"});
  });
  run_check(out, "cluster", [&] {
    const auto galera = galera_membership(engine_, bound());
    const auto group = variable("group_replication_group_name", bound());
    const auto node_local =
        ": GET_LOCK locks are node-local there, so advisory mode (and compat=distributedlock "
        "or raw) does not exclude clients of other nodes";
    if (galera) {
      const bool serving = galera->serving();
      out.push_back(
          {"cluster", get_lock ? st::unsafe : (serving ? st::ok : st::warn),
           galera->describe() + node_local +
               (serving ? "; the row modes' tables replicate and certify across the cluster"
                        : "; this node does not serve writes now (not Synced in the Primary "
                          "component): lock calls through it wait until it does")});
    } else if (group && !group->empty()) {
      out.push_back({"cluster", get_lock ? st::unsafe : st::warn,
                     "a Group Replication member (group " + *group + ")" + node_local +
                         "; the row modes' tables replicate"});
    } else {
      out.push_back({"cluster", st::ok, "no Galera (wsrep_on off) or Group Replication"});
    }
  });
  run_check(out, "schema", [&] {
    int version = 0;
    engine_.with_connection(
        [&](sql::connection& c) {
          version = sql::schema_version(c, engine_.get_dialect(), bound());
        },
        bound());
    const int latest = sql::latest_version(engine_.get_bundle());
    if (version < latest)
      out.push_back({"schema", st::error,
                     "schema at version " + std::to_string(version) + ", this build needs " +
                         std::to_string(latest) + ": run `sqlock migrate`"});
    else
      out.push_back(
          {"schema", st::ok, "schema at version " + std::to_string(version) + " (the latest)"});
  });
  run_check(out, "clock", [&] {
    const auto before = std::chrono::system_clock::now();  // the report's, never a lease's
    auto r = ask("SELECT UNIX_TIMESTAMP(NOW(6))", bound());
    const auto after = std::chrono::system_clock::now();
    out.push_back(clock_finding("clock", before, after, std::stod(cell(r)),
                                "leases run on the server's clock alone"));
  });
  run_check(out, "connections", [&] {
    auto r =
        ask("SELECT @@global.max_connections, @@global.max_user_connections, "
            "(SELECT COUNT(*) FROM information_schema.PROCESSLIST)",
            bound());
    const auto max = number(r), per_user = number(r, 0, 1), used = number(r, 0, 2);
    const auto budget = split_budget(o_);
    const auto need = static_cast<long long>(budget.total);
    std::string msg = "this client opens up to " + std::to_string(need) +
                      " connections (max_connections=" + std::to_string(budget.total) + ": " +
                      std::to_string(budget.statements) + " statements" +
                      (advisory ? ", " + std::to_string(o_.sessions) + " sessions, " +
                                      std::to_string(o_.waiters) + " waiters"
                                : std::string()) +
                      "); the server has max_connections " + std::to_string(max) + ", " +
                      std::to_string(used) + " sessions visible to this user";
    if (per_user > 0) msg += ", max_user_connections " + std::to_string(per_user);
    const bool short_of = need > max - used || (per_user > 0 && need > per_user);
    out.push_back({"connections", short_of ? st::warn : st::ok,
                   msg + (short_of ? ": fewer free than this client may open" : "")});
  });
  run_check(out, "timeouts", [&] {
    std::string set;
    for (const char* v : {"wait_timeout", "max_statement_time", "max_execution_time",
                          "lock_wait_timeout", "innodb_lock_wait_timeout"}) {
      auto value = variable(v, bound());
      if (value && *value != "0" && *value != "0.000000")
        set += (set.empty() ? "" : ", ") + std::string(v) + "=" + *value;
    }
    out.push_back({"timeouts", st::ok,
                   (set.empty() ? std::string("none set") : set) +
                       " (global): overridden by sqlock's sessions"});
  });
  return out;
}

}  // namespace sqlock::mysql::detail
