// The metrics example of docs/operations.md, compiled and run by the tests (examples.metrics):
// sqlock's Prometheus metrics in the application's own registry (built with sqlock::prometheus).
//   metrics URL    takes and releases one lock, then prints the registry as Prometheus text
#include <prometheus/registry.h>
#include <sqlock/client.hpp>
#include <sqlock/prometheus.hpp>

#include <iostream>
#include <memory>
#include <mutex>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: metrics URL\n";
    return 2;
  }
  const std::string url = argv[1];
  // begin-snippet: metrics
  auto registry = std::make_shared<prometheus::Registry>();  // the application's own
  auto metrics = std::make_shared<sqlock::prometheus::metrics_observer>(registry);
  auto c = sqlock::connect(url, {.observer = metrics});  // share one across clients
  // expose `registry` with prometheus-cpp's Exposer, or sqlock::prometheus::text(*registry)
  // end-snippet
  {
    auto l = c.make_lock("orders:42");
    std::lock_guard g(l);
  }
  std::cout << sqlock::prometheus::text(*registry);
}
