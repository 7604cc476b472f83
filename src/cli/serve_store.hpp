// The store as `sqlock serve` shows it: held locks with their age, time left, lease as seen,
// fence parts and count of waiting requests, the waiting requests with how long they waited,
// measured on this host's clock; sorted and paged on the server (numbers as numbers, names with
// their digits in numeric order); a summary for /metrics (held locks by backend mode, oldest hold
// age, holds expiring soon); and the health probe behind /healthz.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"
#include "serve_leases.hpp"
#include "sqlock/client.hpp"

namespace sqlock::cli {

/// The rows of `list --json` plus `age_s` (since acquired), `expires_in_s` and `lease_s` (null
/// when session-bound or unknown), `expiring_soon` and `fence_parts` (null when the backend's
/// fences have no parts), measured against `now`.
nlohmann::json locks_json(const std::vector<lock_status>& rows, wall_time now,
                          lease_tracker& leases, const std::string& backend_kind);

/// Adds to each row of `rows` (locks_json) `waiting`: how many of `waiters` wait for its name;
/// null in every row when the store cannot tell (`waiters` empty).
void add_waiting_counts(nlohmann::json& rows,
                        const std::optional<std::vector<waiting_request>>& waiters);

/// The rows of `list --waiting --json` plus `waited_s` (since `since`; null when unknown),
/// measured against `now`, by name (natural order) and then position.
nlohmann::json waiting_rows_json(std::vector<waiting_request> rows, wall_time now);

/// What a fence of `backend_kind` is made of: PostgreSQL `{"epoch", "counter"}` (epoch << 44
/// | counter), ZooKeeper `{"epoch", "counter"}` (a zxid: epoch << 32 | counter), etcd
/// `{"revision"}`; null elsewhere (a plain counter).
nlohmann::json fence_parts(const std::string& backend_kind, std::uint64_t fence);

/// `rows` (locks_json) sorted by `key` (`dir` < 0: descending) with nulls last: numbers as
/// numbers, text in natural order ("job:9" before "job:10"); unknown keys sort by name.
void sort_rows(nlohmann::json& rows, const std::string& key, int dir);

/// Orders `a` and `b` as people read them: runs of digits by their value.
int natural_compare(const std::string& a, const std::string& b);

/// What /metrics reports about the store.
struct store_summary {
  /// (backend mode, kind) → holds: a shared lock or semaphore counts each holder
  std::map<std::pair<std::string, std::string>, std::uint64_t> held_by_mode;
  double oldest_age_s = 0;     ///< age of the oldest hold (0 = none)
  std::uint64_t expiring = 0;  ///< holds expiring soon (lease_tracker::expiring_soon)
};

/// Summarises `rows` at `now`.
store_summary summarise(const std::vector<lock_status>& rows, wall_time now, lease_tracker& leases);

/// Asks the store something small; "" when it answered, else why not.
std::string probe_store(const client& c);

}  // namespace sqlock::cli
