// The connection budget of one SQL client (URL `max_connections=`, the same option and default
// for every SQL backend): the parts that need connections of their own (a listener, sessions
// that carry holds, sessions that wait in the server) take theirs first and the engine's
// statement pool gets the rest, so that together they never exceed the budget.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "sqlock/backend.hpp"

namespace sqlock::sql {

/// The budget when neither `max_connections=` nor `pool=` is given.
inline constexpr std::size_t default_max_connections = 8;

/// A part of the budget besides the statement pool: how many connections it keeps and how an
/// error message names it ("1 listener connection", "2 sessions").
struct budget_part {
  std::size_t count = 0;
  std::string what;
};

/// The split of one client's budget.
struct budget_split {
  std::size_t total = 0;       ///< the most connections the client opens at once
  std::size_t statements = 0;  ///< the engine's statement pool (>= 1)
};

/// Splits the budget: `parts` first, and the statement pool gets the rest — or exactly `pool`
/// when that is given. Without `max_connections` the budget is default_max_connections, or
/// `pool` plus the parts when `pool` is given. config_error (naming `store` and the options to
/// change) when `pool` is 0 or the parts do not fit.
budget_split split_budget(const std::string& store, std::optional<std::size_t> max_connections,
                          std::optional<std::size_t> pool, const std::vector<budget_part>& parts);

/// Until when a call with `deadline` waits for a busy connection of the budget: a little before
/// it (the last 50 ms, at most a fifth of the time left), kept for the exchange itself — a
/// connection that came back at the last moment would otherwise be given a statement that
/// cannot finish, be closed, and count as an unknown outcome. steady_time::max() stays.
steady_time connection_wait_deadline(steady_time deadline);

}  // namespace sqlock::sql
