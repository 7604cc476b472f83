// Pauses between tries after transient conflicts (conflict_retry.hpp).
#include "conflict_retry.hpp"

#include <thread>

#include "sql/connection_budget.hpp"
#include "sqlock/random.hpp"

namespace sqlock::sql {

namespace {
constexpr milliseconds initial_pause{1};
}  // namespace

conflict_retry::conflict_retry(steady_time deadline, milliseconds cap)
    : last_start_(connection_wait_deadline(deadline)), cap_(cap) {}

bool conflict_retry::pause() {
  const auto pause = backoff_delay(pauses_++, initial_pause, cap_);
  if (std::chrono::steady_clock::now() + pause >= last_start_) return false;
  std::this_thread::sleep_for(pause);
  return true;
}

}  // namespace sqlock::sql
