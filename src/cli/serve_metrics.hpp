// /metrics of `sqlock serve`: the serving process's own counters (its client's lock events
// through sqlock::prometheus, HTTP requests by status, forced releases by result) and the
// store's view at scrape time (held locks by backend and mode, oldest hold age, holds expiring
// soon by their own lease, whether the store answered), in the Prometheus text format.
// Built on prometheus-cpp; without it (serve_metrics_off.cpp) /metrics answers 501.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "serve_leases.hpp"
#include "sqlock/client.hpp"

namespace sqlock::cli {

/// The metrics of one serve process.
class serve_metrics {
 public:
  serve_metrics();
  ~serve_metrics();
  serve_metrics(const serve_metrics&) = delete;
  serve_metrics& operator=(const serve_metrics&) = delete;

  /// Whether /metrics is available in this build.
  static bool available();
  /// The observer to give the serving client (null when unavailable).
  std::shared_ptr<observer> lock_observer() const;
  /// Counts one answered HTTP request.
  void count_request(int status);
  /// Counts one forced release: "released", "not_held" or "error".
  void count_release(std::string_view result);
  /// The exposition text; asks the store through `c` (null: not connected; that or a failure
  /// shows as sqlock_store_up 0). unsupported when unavailable.
  std::string scrape(const client* c, const std::string& backend_kind, lease_tracker& leases);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace sqlock::cli
