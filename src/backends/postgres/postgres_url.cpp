// open() and the URL factory: one class per lock model, picked by mode.
#include "advisory_backend.hpp"
#include "budget.hpp"
#include "compat.hpp"
#include "conninfo.hpp"
#include "dialect.hpp"
#include "pooler.hpp"
#include "row_backend.hpp"
#include "sql/hold_recorder_json.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/url.hpp"

namespace sqlock::postgres {

namespace {

std::shared_ptr<backend> open_backend(const std::string& conninfo, const std::string& shown,
                                      const options& o) {
  auto d = make_dialect(o.mode, o.schema, o.execute_role);  // validates mode, schema, role
  if (o.sessions == 0) throw config_error("PostgreSQL sessions must be at least 1");
  split_budget(o);  // the parts must fit the budget
  if (o.timeout <= milliseconds(0)) throw config_error("PostgreSQL timeout must be positive");
  d.notify = o.listen;
  d.encode_waits = sql::waits_to_json;  // the waiting requests' batches (needs the JSON library)
  d.encode_marks = sql::marks_to_json;  // writer marks removed in batches, likewise
  check_conninfo(conninfo);
  if (!o.compat.empty()) return open_compat(conninfo, shown, o);  // a peer's layout
  if (o.mode == "advisory" && moves_sessions(o.pooler)) refuse_advisory(o.pooler);
  if (o.mode == "advisory") {
    // Through a pooler, waits are not sent into the server (a stopped one could not be
    // cancelled there, see statement_stopper; each waiter session would also take a server
    // session of the pool): waiters wait for NOTIFY.
    auto ao = o;
    if (through_pooler(o.pooler)) ao.waiters = 0;
    return std::make_shared<advisory_backend>(conninfo, shown, ao, std::move(d));
  }
  return std::make_shared<row_backend>(conninfo, shown, o, std::move(d));
}

}  // namespace

std::shared_ptr<backend> open(const std::string& conninfo, const options& o) {
  return open_backend(conninfo, conninfo, o);
}

}  // namespace sqlock::postgres

namespace sqlock::backends {
void register_postgres() {
  auto factory = [](const url& u) -> std::shared_ptr<backend> {
    postgres::options o;
    auto conninfo = postgres::parse_url(u.original, o);
    return postgres::open_backend(conninfo, u.original, o);
  };
  register_backend("postgresql", factory);
  register_backend("postgres", factory);
}
}  // namespace sqlock::backends
