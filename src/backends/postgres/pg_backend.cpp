// The shared base of the PostgreSQL backends: engine, notifier, description.
#include "pg_backend.hpp"

#include "budget.hpp"
#include "connection.hpp"
#include "conninfo.hpp"
#include "sqlock/postgres/dialect.hpp"

namespace sqlock::postgres {

pg_backend::pg_backend(const std::string& conninfo, const std::string& shown, const options& o,
                       sql::dialect d)
    : pg_backend(conninfo, shown, o, std::move(d), std::make_shared<sql::connection_counter>()) {}

pg_backend::pg_backend(const std::string& conninfo, const std::string& shown, const options& o,
                       sql::dialect d, std::shared_ptr<sql::connection_counter> counter)
    // The statement pool is bounded by its share of the budget; its connections are kept.
    : engine_backend(
          bundle(), std::move(d),
          [conninfo, t = o.timeout, counter] {
            return std::make_unique<pg_connection>(conninfo, t, -1, counter);
          },
          shown, split_budget(o).statements, true, counter),
      shown_(shown) {
  set_io_timeout(o.timeout);
  set_auto_migrate(o.auto_migrate);
  if (o.listen)
    notifier_ = std::make_unique<notifier>(conninfo, notify_channel(o.schema), o.timeout, counter_);
}

std::unique_ptr<wait_state> pg_backend::release_watch(const lock_request& req) {
  if (!notifier_) return nullptr;
  return std::make_unique<notify_wait>(*notifier_, req.name);
}

void pg_backend::attempt_starts(wait_state* ws) {
  // Only release_watch() above makes the wait states this backend is given (wrapped by the
  // engine's open_wait() for exclusive row requests).
  if (auto* w = inner_wait(ws)) static_cast<notify_wait*>(w)->attempt_starts();
}

capabilities pg_backend::caps() const noexcept {
  auto c = engine_backend::caps();
  c.notify = notifier_ != nullptr;
  return c;
}

std::string pg_backend::describe() const {
  return redact_conninfo(shown_) + " (" + dialect_.mode + ")";
}

}  // namespace sqlock::postgres
