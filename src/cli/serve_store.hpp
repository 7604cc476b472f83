// The store as `sqlock serve` shows it: held locks with their age and time left measured on
// this host's clock, a summary for /metrics (held locks by backend mode, oldest hold age,
// holds expiring within one renewal interval), and the health probe behind /healthz.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"
#include "sqlock/client.hpp"

namespace sqlock::cli {

/// The rows of `list --json` plus `age_s` (since acquired) and `expires_in_s` (null when
/// session-bound or unknown), measured against `now`.
nlohmann::json locks_json(const std::vector<lock_status>& rows, wall_time now);

/// What /metrics reports about the store.
struct store_summary {
  /// (backend mode, kind) → holds: a shared lock or semaphore counts each holder
  std::map<std::pair<std::string, std::string>, std::uint64_t> held_by_mode;
  double oldest_age_s = 0;     ///< age of the oldest hold (0 = none)
  std::uint64_t expiring = 0;  ///< holds whose lease ends within one renewal interval
};

/// Summarises `rows` at `now`; `renewal_interval` is the window for `expiring`.
store_summary summarise(const std::vector<lock_status>& rows, wall_time now,
                        std::chrono::milliseconds renewal_interval);

/// Asks the store something small; "" when it answered, else why not.
std::string probe_store(const client& c);

}  // namespace sqlock::cli
