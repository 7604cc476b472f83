// sqlock::prometheus: an observer that turns a client's events into Prometheus metrics on a
// prometheus-cpp registry (acquisitions, contended acquisitions, timeouts, retries, wait- and
// hold-time histograms, renewals, renewal failures, losses, releases, release errors, current
// holds), labelled by backend kind and mode. A label per lock name is a cardinality trap, so it
// is off by default: the application opts in with a grouping function (name_prefix() keeps the
// part before a separator, so "orders:42" and "orders:43" count as "orders"). Built only when
// prometheus-cpp is found; link sqlock::prometheus. Expose the registry with prometheus-cpp's
// own Exposer, or as text with text().
#pragma once

#include "sqlock/export.hpp"

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/registry.h>

#include "sqlock/observer.hpp"

namespace sqlock::prometheus {

/// Maps a lock name to the value of the `lock` label ("" = leave the event out of the label).
using lock_grouping = std::function<std::string(std::string_view name)>;

/// Options of a metrics observer (an aggregate: use designated initialisers).
struct metrics_options {
  std::string prefix = "sqlock";  ///< metric name prefix ("" = none): sqlock_acquisitions_total
  lock_grouping lock_label{};     ///< null = no `lock` label (the default); see name_prefix()
  std::vector<double> wait_buckets{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30};  ///< seconds
  std::vector<double> hold_buckets{0.01, 0.1, 1, 10, 60, 300, 1800, 3600};         ///< seconds
};

/// A grouping that keeps the part of a name before the first `separator` (the whole name when
/// it has none), cut to `max_length` bytes.
SQLOCK_API lock_grouping name_prefix(char separator = ':', std::size_t max_length = 64);

/// Metrics for every client whose client_options::observer it is (share one across clients).
class SQLOCK_API metrics_observer final : public observer {
 public:
  /// Registers its metric families on `registry` (a new one when null).
  explicit metrics_observer(std::shared_ptr<::prometheus::Registry> registry = nullptr,
                            metrics_options opts = {});
  ~metrics_observer() override;
  metrics_observer(const metrics_observer&) = delete;
  metrics_observer& operator=(const metrics_observer&) = delete;

  /// Counts one event.
  void notify(const event& e) noexcept override;

  /// The registry the metrics live on.
  const std::shared_ptr<::prometheus::Registry>& registry() const { return registry_; }

 private:
  struct families;
  std::shared_ptr<::prometheus::Registry> registry_;
  metrics_options opts_;
  std::unique_ptr<families> f_;
};

/// Everything on `registry` in the Prometheus text exposition format (version 0.0.4).
SQLOCK_API std::string text(const ::prometheus::Registry& registry);

}  // namespace sqlock::prometheus
