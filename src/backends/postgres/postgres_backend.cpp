// The shared base of the PostgreSQL backends: engine, notifier, description.
#include "postgres_backend.hpp"

#include <algorithm>

#include "budget.hpp"
#include "conninfo.hpp"
#include "diagnostics.hpp"
#include "dialect.hpp"
#include "errors.hpp"
#include "pooler.hpp"
#include "postgres_driver.hpp"

namespace sqlock::postgres {

namespace {

// How long a registration as a waiter lasts at most; a longer wait registers again.
constexpr milliseconds registration_span{60000};

// The pooled connections' way with a pooler.
pooling pooled(const options& o) {
  pooling p;
  p.unnamed = unnamed_statements(o);
  p.keeps_session = !moves_sessions(o.pooler);
  p.declared = !o.pooler.empty();
  p.cancel = !through_pooler(o.pooler);
  return p;
}

// The listener of the options, or null when waiters poll: the LISTEN connection goes where
// the URL sends it (listen_host...), else through the URL unless a pooler that moves sessions
// is declared; through an undeclared proxy it turns deaf (see notifier).
std::unique_ptr<notifier> make_notifier(const std::string& conninfo, const options& o,
                                        const std::shared_ptr<sql::connection_counter>& counter) {
  if (!o.listen) return nullptr;
  const auto channel = notify_channel(o.schema);
  if (listens_elsewhere(o))
    return std::make_unique<notifier>(listen_conninfo(conninfo, o), channel, o.timeout, counter);
  if (moves_sessions(o.pooler)) return nullptr;
  return std::make_unique<notifier>(conninfo, channel, o.timeout, counter, o.pooler.empty());
}

// In recovery (a hot standby), read-only by default, and the server's address as it sees it
// (a pooler's server, not the pooler).
// How long connect() without a deadline waits for a server with too many clients (as the
// engine's schema check).
constexpr milliseconds server_full_wait{30000};

constexpr const char* writable_query =
    "SELECT pg_catalog.pg_is_in_recovery(), "
    "pg_catalog.current_setting('default_transaction_read_only') = 'on', "
    "coalesce(pg_catalog.host(pg_catalog.inet_server_addr()), 'local socket') || ':' || "
    "pg_catalog.current_setting('port')";

}  // namespace

pg_backend::pg_backend(const std::string& conninfo, const std::string& shown, const options& o,
                       sql::dialect d)
    : pg_backend(conninfo, shown, o, std::move(d),
                 std::make_shared<sql::connection_counter>(split_budget(o).total)) {}

pg_backend::pg_backend(const std::string& conninfo, const std::string& shown, const options& o,
                       sql::dialect d, std::shared_ptr<sql::connection_counter> counter)
    // The statement pool is bounded by its share of the budget; its connections are kept.
    : engine_backend(
          bundle(), std::move(d),
          [conninfo, t = o.timeout, counter, p = pooled(o)] {
            return std::make_unique<pg_connection>(conninfo, t, -1, p, counter);
          },
          shown, split_budget(o).statements, true, counter),
      shown_(shown),
      register_{"pg_register_waiter",
                {"SELECT " + o.schema + ".advisory_wait_notify(:name, :lease_ms)"}},
      writable_{"pg_writable", {writable_query}} {
  set_io_timeout(o.timeout);
  set_auto_migrate(o.auto_migrate);
  set_release_in_background(o.async_release);
  notifier_ = make_notifier(conninfo, o, counter_);
  diagnostics_ = std::make_unique<pg_diagnostics>(*this, conninfo, o);
}

pg_acquisition::pg_acquisition(pg_backend& b, lock_request req, const wait_policy& policy,
                               std::unique_ptr<notify_wait> notify)
    : engine_acquisition(b, std::move(req), policy, nullptr), pg_(b), notify_(std::move(notify)) {}

std::optional<lease_info> pg_acquisition::attempt(steady_time deadline) {
  return listed(pg_.one_attempt(req_, deadline, this));
}

std::optional<lease_info> pg_backend::one_attempt(const lock_request& req, steady_time deadline,
                                                  pg_acquisition* a) {
  return attempt(req, deadline, a);
}

std::optional<lease_info> pg_backend::try_acquire(const lock_request& req, steady_time deadline) {
  return one_attempt(req, deadline, nullptr);
}

std::unique_ptr<acquisition> pg_backend::make_acquisition(const lock_request& req,
                                                          const wait_policy& policy) {
  return std::make_unique<pg_acquisition>(
      *this, req, policy,
      notifier_ ? std::make_unique<notify_wait>(*notifier_, req.name) : nullptr);
}

bool pg_backend::register_waiter(pg_acquisition& w, const lock_request& req, steady_time deadline,
                                 const runner& run) {
  const auto now = std::chrono::steady_clock::now();
  if (!w.listens() || w.registered(now)) return true;
  const auto span =
      std::min(std::chrono::duration_cast<milliseconds>(deadline - now), registration_span);
  sql::params p;
  p.name = req.name;
  p.lease_ms = std::max<std::int64_t>(span.count(), 1);
  try {
    run(register_, p, exchange_bound(deadline, io_timeout()));
  } catch (const connection_error&) {
    // Cut off by the call's deadline on a slow server (a try_lock_for of 500 ms beside a
    // loaded full run): not obtained in time. Before it, a server that does not answer is
    // still an error.
    if (std::chrono::steady_clock::now() >= deadline) return false;
    throw;
  }
  w.registered_until(now + span);
  return true;
}

capabilities pg_backend::caps() const noexcept {
  auto c = engine_backend::caps();
  c.notify = notifier_ != nullptr;
  return c;
}

void pg_backend::verify(steady_time deadline) {
  // Through run(): a server with too many clients is asked again, as the schema check does.
  const auto now = std::chrono::steady_clock::now();
  const auto r =
      run(writable_, {}, deadline == steady_time::max() ? now + server_full_wait : deadline);
  if (r.size() == 1 && r[0].size() == 3) {
    const bool standby = sql::truthy(r[0][0]), read_only = sql::truthy(r[0][1]);
    if (standby || read_only) throw_read_only(r[0][2].value_or("?"), standby, "");
  }
  engine_backend::verify(deadline);
}

std::string pg_backend::describe() const {
  return redact_conninfo(shown_) + " (" + dialect_.mode + ")" + release_note();
}

}  // namespace sqlock::postgres
