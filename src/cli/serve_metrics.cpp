#include "serve_metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>

#include "serve_store.hpp"
#include "sqlock/prometheus.hpp"

namespace sqlock::cli {

using ::prometheus::Counter;
using ::prometheus::Family;
using ::prometheus::Gauge;
using ::prometheus::Registry;

struct serve_metrics::impl {
  std::shared_ptr<Registry> registry = std::make_shared<Registry>();
  std::shared_ptr<prometheus::metrics_observer> locks =
      std::make_shared<prometheus::metrics_observer>(registry);
  Family<Counter>& requests = ::prometheus::BuildCounter()
                                  .Name("sqlock_serve_http_requests_total")
                                  .Help("HTTP requests answered by sqlock serve, by status")
                                  .Register(*registry);
  Family<Counter>& releases = ::prometheus::BuildCounter()
                                  .Name("sqlock_serve_force_releases_total")
                                  .Help("forced releases through sqlock serve, by result")
                                  .Register(*registry);
};

serve_metrics::serve_metrics() : impl_(std::make_unique<impl>()) {}
serve_metrics::~serve_metrics() = default;

bool serve_metrics::available() {
  return true;
}

std::shared_ptr<observer> serve_metrics::lock_observer() const {
  return impl_->locks;
}

void serve_metrics::count_request(int status) {
  impl_->requests.Add({{"code", std::to_string(status)}}).Increment();
}

void serve_metrics::count_release(std::string_view result) {
  impl_->releases.Add({{"result", std::string(result)}}).Increment();
}

std::string serve_metrics::scrape(const client* c, const std::string& backend,
                                  lease_tracker& leases) {
  // The store's view is built afresh for each scrape: a lock released since the last one must
  // not linger as a stale series.
  Registry store;
  auto gauge = [&](const char* name, const char* help) -> Family<Gauge>& {
    return ::prometheus::BuildGauge().Name(name).Help(help).Register(store);
  };
  auto& up = gauge("sqlock_store_up", "1 when the store answered this scrape, else 0");
  auto& held = gauge("sqlock_store_held_locks",
                     "holds in the store, by backend mode and kind (each shared holder and "
                     "permit counts)");
  auto& oldest = gauge("sqlock_store_oldest_hold_age_seconds",
                       "age of the oldest hold in the store (0 when none)");
  auto& expiring = gauge("sqlock_store_holds_expiring_soon",
                         "holds with less than half their lease left (a renewal overdue)");
  try {
    if (!c) throw connection_error("not connected");
    auto rows = c->list();
    auto s = summarise(rows, std::chrono::system_clock::now(), leases);
    for (const auto& [mode_kind, n] : s.held_by_mode)
      held.Add({{"backend", backend}, {"mode", mode_kind.first}, {"kind", mode_kind.second}})
          .Set(static_cast<double>(n));
    oldest.Add({{"backend", backend}}).Set(s.oldest_age_s);
    expiring.Add({{"backend", backend}}).Set(static_cast<double>(s.expiring));
    up.Add({{"backend", backend}}).Set(1);
  } catch (const std::exception&) {
    up.Add({{"backend", backend}}).Set(0);
  }
  return prometheus::text(*impl_->registry) + prometheus::text(store);
}

}  // namespace sqlock::cli
