// Splitting one client's connection budget between the parts that open connections.
#include "budget.hpp"

#include <string>

#include "sqlock/errors.hpp"

namespace sqlock::postgres {

connection_budget split_budget(const options& o) {
  connection_budget b;
  b.listener = o.listen ? 1 : 0;
  if (o.mode == "advisory") {
    b.sessions = o.sessions;
    b.waiters = o.waiters;
  }
  const std::size_t others = b.listener + b.sessions + b.waiters;
  const auto parts = [&] {
    std::string s = b.listener ? "1 listener connection" : "";
    if (o.mode == "advisory")
      s += std::string(s.empty() ? "" : " + ") + std::to_string(b.sessions) + " sessions + " +
           std::to_string(b.waiters) + " waiters";
    return s;
  };
  if (o.pool && *o.pool == 0) throw config_error("PostgreSQL pool must be at least 1 connection");
  if (o.max_connections) {
    b.total = *o.max_connections;
    if (o.pool) {
      b.statements = *o.pool;
      if (b.statements + others > b.total)
        throw config_error("PostgreSQL pool=" + std::to_string(b.statements) + " + " + parts() +
                           " exceed max_connections=" + std::to_string(b.total) +
                           ": raise max_connections or lower the others");
    } else {
      if (others >= b.total)
        throw config_error("PostgreSQL max_connections=" + std::to_string(b.total) +
                           " leaves no statement connection after " + parts() +
                           ": raise max_connections (at least " + std::to_string(others + 1) +
                           ") or lower the others");
      b.statements = b.total - others;
    }
  } else if (o.pool) {
    b.statements = *o.pool;
    b.total = b.statements + others;
  } else {
    b.total = default_max_connections;
    if (others >= b.total)
      throw config_error("PostgreSQL " + parts() +
                         " leave no statement connection in the default "
                         "budget of " +
                         std::to_string(b.total) + " connections: set max_connections (at least " +
                         std::to_string(others + 1) + ") or lower the others");
    b.statements = b.total - others;
  }
  return b;
}

}  // namespace sqlock::postgres
