// serve_metrics in a build without prometheus-cpp: /metrics answers 501.
#include "serve_metrics.hpp"

namespace sqlock::cli {

struct serve_metrics::impl {};
serve_metrics::serve_metrics() = default;
serve_metrics::~serve_metrics() = default;
bool serve_metrics::available() {
  return false;
}
std::shared_ptr<observer> serve_metrics::lock_observer() const {
  return nullptr;
}
void serve_metrics::count_request(int) {}
void serve_metrics::count_release(std::string_view) {}
std::string serve_metrics::scrape(const client*, const std::string&, lease_tracker&) {
  throw unsupported("this sqlock was built without prometheus-cpp: no /metrics");
}

}  // namespace sqlock::cli
