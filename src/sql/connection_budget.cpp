// Splitting one SQL client's connection budget between the parts that open connections.
#include "connection_budget.hpp"

#include <algorithm>

#include "sqlock/errors.hpp"

namespace sqlock::sql {

namespace {
// The part of a call's time kept for the exchange after waiting for a connection.
constexpr milliseconds exchange_reserve{50};
}  // namespace

steady_time connection_wait_deadline(steady_time deadline) {
  if (deadline == steady_time::max()) return deadline;
  const auto left = deadline - std::chrono::steady_clock::now();
  if (left <= left.zero()) return deadline;
  return deadline - std::min<std::chrono::steady_clock::duration>(exchange_reserve, left / 5);
}

budget_split split_budget(const std::string& store, std::optional<std::size_t> max_connections,
                          std::optional<std::size_t> pool, const std::vector<budget_part>& parts) {
  std::size_t others = 0;
  std::string named;  // "1 listener connection + 2 sessions + 2 waiters"
  for (const auto& p : parts) {
    others += p.count;
    named += (named.empty() ? "" : " + ") + p.what;
  }
  if (pool && *pool == 0) throw config_error(store + " pool must be at least 1 connection");
  budget_split b;
  if (pool) {
    b.statements = *pool;
    b.total = max_connections.value_or(b.statements + others);
    if (b.statements + others > b.total)
      throw config_error(store + " pool=" + std::to_string(b.statements) +
                         (named.empty() ? "" : " + " + named) + " exceed max_connections=" +
                         std::to_string(b.total) + ": raise max_connections or lower the others");
    return b;
  }
  b.total = max_connections.value_or(default_max_connections);
  if (others >= b.total)
    throw config_error(store + " " + named + " leave no statement connection in " +
                       (max_connections ? "max_connections=" + std::to_string(b.total)
                                        : "the default budget of " + std::to_string(b.total)) +
                       ": set max_connections (at least " + std::to_string(others + 1) +
                       ") or lower the others");
  b.statements = b.total - others;
  return b;
}

}  // namespace sqlock::sql
