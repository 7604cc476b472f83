// The engine's operations on one libpq connection: prepared once per connection, run with text
// parameters, several statements wrapped in a transaction.
#include "postgres_driver.hpp"

#include "errors.hpp"
#include "pooler.hpp"
#include "session_settings.hpp"
#include "sql/connection_budget.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/random.hpp"

namespace sqlock::postgres {

namespace {

// Serializes concurrent migrations of one database ("sqlock" + 0x0001 as a 64-bit key).
constexpr const char* migrate_lock_key = "8318004226567127041";

// A migration script may rebuild tables: it gets far longer than one lock operation.
constexpr milliseconds script_timeout{5 * 60 * 1000};

}  // namespace

pg_connection::pg_connection(std::string conninfo, milliseconds io_timeout, int stop_fd, pooling p,
                             std::shared_ptr<sql::connection_counter> counter)
    : conninfo_(std::move(conninfo)),
      io_timeout_(io_timeout),
      stop_fd_(stop_fd),
      pooling_(p),
      connections_(std::move(counter)) {}

pg_connection::~pg_connection() =
    default;  // the libpq connection's close counts it closed, in time

void pg_connection::connect(steady_time deadline) {
  ready(deadline);
}

libpq_connection& pg_connection::ready(steady_time deadline) {
  if (!link_) {
    // A place in the budget first: a connection closed earlier counts until the server has
    // ended its session, so the server never sees more of this client's than the budget.
    if (connections_ && !connections_->reserve(sql::connection_wait_deadline(deadline)))
      throw sql::pool_busy(
          "every connection of the PostgreSQL client's budget stayed open until the call's "
          "deadline (a closed one's server session had not ended)");
    std::unique_ptr<libpq_connection> l;
    try {
      l = std::make_unique<libpq_connection>(conninfo_, deadline, stop_fd_);
    } catch (...) {
      if (connections_) connections_->closed();
      throw;
    }
    if (connections_) {
      connections_->connected();
      l->on_ended([c = connections_] { c->closed(); });
    }
    // A session whose settings failed is dropped: every open connection has them.
    if (pooling_.refuse_proxy || pooling_.learn_server_process) {
      const int process = server_process(*l, deadline);
      if (pooling_.refuse_proxy && process != l->server_pid()) refuse_advisory("");
      server_process_ = process;
    }
    if (pooling_.keeps_session) apply_session_settings(*l, deadline);
    link_ = std::move(l);
  }
  return *link_;
}

std::unique_ptr<sql::wait_breaker> pg_connection::break_wait_on(const std::stop_token& stop) {
  return std::make_unique<statement_stopper>(link_.get(), stop, pooling_.cancel);
}

std::vector<std::string> pg_connection::notifications() {
  return link_ ? link_->notifications() : std::vector<std::string>{};
}

bool pg_connection::behind_proxy(steady_time deadline) {
  auto& l = ready(deadline);
  return server_process(l, deadline) != l.server_pid();
}

std::vector<pg_connection::statement>& pg_connection::compiled(const sql::operation& op) {
  auto it = cache_.find(op.key);
  if (it != cache_.end()) return it->second;
  // Names no other connection uses: through a pooler, a server session may carry statements
  // other clients prepared, and running one of theirs by a shared name would run their text.
  if (prefix_.empty()) prefix_ = "sqlock_" + random_token().substr(0, 16) + "_";
  std::vector<statement> list;
  for (const auto& text : op.statements) {
    auto c = sql::compile(text, sql::placeholder::dollar);
    list.push_back({prefix_ + std::to_string(++counter_), std::move(c.text), std::move(c.names)});
  }
  return cache_.emplace(op.key, std::move(list)).first->second;
}

sql::rows pg_connection::exec(libpq_connection& l, statement& s, const sql::params& p,
                              steady_time deadline, const std::string& what) {
  std::vector<std::string> values;
  values.reserve(s.names.size());
  for (const auto& n : s.names) {
    auto v = sql::lookup(p, n);
    if (v.is_int) {
      values.push_back(std::to_string(v.i));
    } else {
      if (v.s.find('\0') != std::string_view::npos)
        throw config_error("PostgreSQL text cannot contain NUL bytes (parameter :" + n + ")");
      values.emplace_back(v.s);
    }
  }
  if (pooling_.unnamed) return l.run_unnamed(s.text, values, deadline, what);
  if (s.on_server) return l.run_prepared(s.name, values, deadline, what);
  return l.prepare_and_run(s.name, s.text, values, deadline, what, s.on_server);
}

sql::rows pg_connection::run(const sql::operation& op, const sql::params& p, steady_time deadline) {
  // Names are checked here, before anything is sent: a bad one is a short config_error.
  if (!p.name.empty()) check_name(p.name);
  if (!p.prefix.empty()) check_name(p.prefix, "name prefix");
  try {
    return run_once(op, p, deadline);
  } catch (const statement_lost&) {
    // A pooler gave this connection another server session: nothing of the call ran (the
    // server refused its statement at parse or bind, a transaction was rolled back), so it
    // runs again, unnamed, as every later call of this connection.
    pooling_.unnamed = true;
    return run_once(op, p, deadline);
  }
}

sql::rows pg_connection::run_once(const sql::operation& op, const sql::params& p,
                                  steady_time deadline) {
  auto& stmts = compiled(op);
  auto& l = ready(deadline);
  const std::string what = "PostgreSQL operation '" + op.key + "' failed";
  if (stmts.size() == 1) return exec(l, stmts[0], p, deadline, what);
  l.run_simple("BEGIN", deadline, what);
  try {
    sql::rows last;
    for (auto& s : stmts) last = exec(l, s, p, deadline, what);
    l.run_simple("COMMIT", deadline, what);
    return last;
  } catch (const connection_error&) {
    throw;
  } catch (...) {
    if (!l.closed()) l.run_simple("ROLLBACK", deadline, what);
    throw;
  }
}

void pg_connection::execute_script(std::string_view script) {
  const std::string what = "PostgreSQL migration script failed";
  auto deadline = std::chrono::steady_clock::now() + std::max(script_timeout, io_timeout_);
  ready(deadline).run_simple(std::string(script), deadline, what);
}

void pg_connection::begin_migration() {
  // Waits in the server as long as another migration of this database runs (its session
  // settings leave lock_timeout and statement_timeout off); the session lock goes with a
  // connection closed by the deadline.
  auto deadline = std::chrono::steady_clock::now() + std::max(script_timeout, io_timeout_);
  // Behind an undeclared proxy the pool mode is unknown: a session lock could stay on a server
  // session the pooler hands to other clients, blocking every later migration.
  if (!pooling_.keeps_session || (!pooling_.declared && behind_proxy(deadline)))
    throw config_error(
        "PostgreSQL migrations hold a session lock, which a pooler in transaction or statement "
        "pooling does not keep: run `sqlock migrate` (or migrate=auto) with a URL that reaches "
        "the server directly or through session pooling (declared with pooler=session when "
        "the connection goes through a pooler)");
  ready(deadline).run_simple(
      std::string("SELECT pg_catalog.pg_advisory_lock(") + migrate_lock_key + ")", deadline,
      "PostgreSQL migration lock failed");
}

void pg_connection::end_migration(bool) noexcept {
  if (!link_ || link_->closed()) return;  // the session, and its lock, are gone
  try {
    auto deadline = exchange_bound(steady_time::max(), io_timeout_);
    link_->run_simple(std::string("SELECT pg_catalog.pg_advisory_unlock(") + migrate_lock_key + ")",
                      deadline, "PostgreSQL migration unlock failed");
  } catch (...) {
    // Not released: end the session, which frees the lock.
    link_->close();
  }
}

sql::rows pg_connection::query(std::string_view text, steady_time deadline) {
  deadline = exchange_bound(deadline, io_timeout_);
  return ready(deadline).run_simple(std::string(text), deadline, "PostgreSQL query failed");
}

void pg_connection::exec(const std::string& text, steady_time deadline) {
  ready(deadline).run_simple(text, deadline, "PostgreSQL statement failed");
}

}  // namespace sqlock::postgres
