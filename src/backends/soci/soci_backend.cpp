// SOCI backend: the shared SQL engine over soci::session (URL-opened, attached to the
// caller's session or pool), transaction-scoped locks in the caller's transaction, and the
// registration of the soci+<db> URL schemes.
#include <thread>

#include "soci_connection.hpp"
#include "sql/connection_budget.hpp"
#include "sqlock/random.hpp"

namespace sqlock {
namespace soci {
namespace detail {

const flavor& flavor_named(const std::string& soci_name) {
  for (const flavor* f : {sqlite3_flavor(), postgresql_flavor(), mysql_flavor()})
    if (f && f->soci_name() == soci_name) return *f;
  if (soci_name == "postgresql" || soci_name == "mysql")
    throw config_error("soci+" + soci_name + " is not built into this sqlock (it needs the " +
                       soci_name + " dialect target at build time)");
  throw config_error("SOCI backend '" + soci_name +
                     "' is not supported by sqlock (use sqlite3, postgresql or mysql)");
}

const flavor& flavor_of(::soci::session& s) {
  std::string name;
  try {
    name = s.get_backend_name();
  } catch (const std::exception& e) {
    throw usage_error(std::string("the SOCI session is not connected: ") + e.what());
  }
  if (name.empty()) throw usage_error("the SOCI session is not connected");
  return flavor_named(name);
}

sql::dialect dialect_of(const flavor& f, const options& o) {
  if (o.compat.empty()) return f.dialect(o);
  if (o.compat != "shedlock")
    throw config_error("SOCI compat must be shedlock (got '" + o.compat + "')");
  // ShedLock's rows are leases on the database's clock: sqlock's row model, no other.
  if (o.mode != "pessimistic")
    throw config_error("compat=shedlock keeps ShedLock's rows and rules; mode=" + o.mode +
                       " cannot carry them (leave mode out)");
  return f.shedlock_dialect(o.shedlock_table);
}

namespace {

class soci_backend final : public sql::engine_backend {
 public:
  // Every connection is a statement connection: the budget is the bounded pool (kept).
  soci_backend(const flavor& f, const options& o, sql::connector open, std::string url_text,
               std::shared_ptr<sql::connection_counter> counter = nullptr)
      : engine_backend(f.bundle(), dialect_of(f, o), std::move(open), std::move(url_text),
                       sql::split_budget("SOCI", o.max_connections, o.pool, {}).statements, true,
                       std::move(counter)),
        flavor_(f) {
    set_io_timeout(o.io_timeout);
  }

  std::string kind() const override { return "soci+" + flavor_.soci_name(); }

  std::optional<lease_info> attempt(const lock_request& req, steady_time deadline,
                                    sql::engine_acquisition* a) override {
    flavor_.check_name(req.name);
    return engine_backend::attempt(req, deadline, a);
  }

  bool force_release(std::string_view name, std::string_view actor) override {
    flavor_.check_name(name);
    return engine_backend::force_release(name, actor);
  }

 private:
  const flavor& flavor_;
};

std::shared_ptr<backend> finish(const std::shared_ptr<soci_backend>& b, const flavor& f,
                                const options& o) {
  if (f.migrates_on_open())
    b->migrate();  // a SQLite file is the application's own: create the schema on first use
  else
    b->set_auto_migrate(o.auto_migrate);
  return b;
}

// A backend whose every engine connection draws on `src` (the application's session or pool).
std::shared_ptr<backend> over_source(const flavor& f, const options& o,
                                     std::shared_ptr<session_source> src, const std::string& what) {
  auto b = std::make_shared<soci_backend>(
      f, o,
      [&f, src, o]() -> std::unique_ptr<sql::connection> {
        return std::make_unique<soci_connection>(f, src, o);
      },
      "soci+" + f.soci_name() + ":(" + what + ")");
  return finish(b, f, o);
}

}  // namespace
}  // namespace detail

using namespace detail;

std::shared_ptr<backend> open(const std::string& url_text) {
  auto u = url::parse(url_text);
  const flavor& f = flavor_of_url(u);
  options o = options_from_url(u, f);
  std::string connect = f.connect_string(u, o);
  auto counter = std::make_shared<sql::connection_counter>();
  auto b = std::make_shared<soci_backend>(
      f, o,
      [&f, connect, o, counter]() -> std::unique_ptr<sql::connection> {
        return std::make_unique<soci_connection>(f, owned_source(f, connect, o, counter), o);
      },
      url_text, counter);
  return finish(b, f, o);
}

std::shared_ptr<backend> attach(::soci::session& session, const options& opts) {
  const flavor& f = flavor_of(session);
  guarded(f, "cannot prepare the SOCI session", [&] { f.prepare_session(session, opts, false); });
  options o = opts;
  o.max_connections.reset();  // the caller's one session
  o.pool = 1;
  return over_source(f, o, borrowed_source(session), "application session");
}

std::shared_ptr<backend> attach(::soci::connection_pool& pool, const options& opts) {
  const flavor* fp = nullptr;
  {
    ::soci::session probe(pool);
    fp = &flavor_of(probe);
  }
  const flavor& f = *fp;
  return over_source(f, opts, pool_source(pool, f, opts), "application pool");
}

namespace {

bool one_xact_attempt(const flavor& f, ::soci::session& s, std::string_view name, const options& o,
                      bool& wait_ok) {
  if (name.empty()) throw config_error("lock name must not be empty");
  bool got = false;
  guarded(f, "transaction-scoped lock through SOCI " + f.soci_name(), [&] {
    if (!f.in_transaction(s))
      throw usage_error(
          "a transaction-scoped lock needs an open transaction on the session "
          "(soci::transaction or session.begin())");
    got = f.try_xact(s, name, o, wait_ok);
  });
  return got;
}

}  // namespace

bool try_lock_xact(::soci::session& session, std::string_view name, const options& opts) {
  bool wait_ok = true;
  return one_xact_attempt(flavor_of(session), session, name, opts, wait_ok);
}

bool lock_xact(::soci::session& session, std::string_view name, milliseconds timeout,
               const options& opts) {
  const flavor& f = flavor_of(session);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (unsigned attempt = 0;; ++attempt) {
    bool wait_ok = true;
    if (one_xact_attempt(f, session, name, opts, wait_ok)) return true;
    auto now = std::chrono::steady_clock::now();
    if (!wait_ok || now >= deadline) return false;
    auto delay = backoff_delay(attempt, milliseconds(2), milliseconds(100));
    std::this_thread::sleep_until(std::min<steady_time>(now + delay, deadline));
  }
}

bool fence_check(::soci::session& session, std::string_view name, std::uint64_t fence,
                 const options& opts) {
  const flavor& f = flavor_of(session);
  sql::params p;
  p.name = std::string(name);
  p.fence = static_cast<std::int64_t>(fence);
  p.mode = "pessimistic";
  bool ok = false;
  guarded(f, "fence_check through SOCI " + f.soci_name(), [&] {
    f.prepare_session(session, opts, false);
    options o = opts;
    o.mode = "pessimistic";
    auto d = dialect_of(f, o);
    sql::rows r;
    for (const auto& text : d.fence_check.statements) r = run_once(f, session, text, p);
    ok = sql::says_true(r);
  });
  return ok;
}

connect_info connect_info_for(const std::string& url_text) {
  auto u = url::parse(url_text);
  if (u.scheme.rfind("soci+", 0) != 0)
    throw config_error("not a soci+ URL: '" + u.redacted() + "'");
  const flavor& f = flavor_named(u.scheme.substr(5));
  return {f.soci_name(), f.connect_string(u, options{})};
}

int migrate(::soci::session& session, const options& opts) {
  const flavor& f = flavor_of(session);
  guarded(f, "cannot prepare the SOCI session", [&] { f.prepare_session(session, opts, false); });
  soci_connection c(f, borrowed_source(session), opts);
  return sql::migrate(c, f.bundle(), dialect_of(f, opts));
}

}  // namespace soci

namespace backends {
void register_soci() {
  using soci::detail::flavor;
  for (const flavor* f : {soci::detail::sqlite3_flavor(), soci::detail::postgresql_flavor(),
                          soci::detail::mysql_flavor()}) {
    if (!f) continue;
    register_backend("soci+" + f->soci_name(), [](const url& u) -> std::shared_ptr<backend> {
      return soci::open(u.original);
    });
  }
}
}  // namespace backends

}  // namespace sqlock

namespace sqlock::soci::detail {
#ifndef SQLOCK_SOCI_POSTGRESQL
const flavor* postgresql_flavor() {
  return nullptr;
}
#endif
#ifndef SQLOCK_SOCI_MYSQL
const flavor* mysql_flavor() {
  return nullptr;
}
#endif
}  // namespace sqlock::soci::detail
