// What an observer costs a lock/unlock pair on the in-process backend (the cheapest store, so
// the observer's share is the largest it can be): none (the ceiling), a logger whose level
// filters every event out, a logger that formats every event into a no-op sink, and the
// Prometheus metrics observer when it is built.
#include <benchmark/benchmark.h>

#include "sqlock/client.hpp"
#include "sqlock/random.hpp"
#ifdef SQLOCK_BENCH_PROMETHEUS
#include "sqlock/prometheus.hpp"
#endif

namespace {

void pair_with(benchmark::State& state, std::shared_ptr<sqlock::observer> o) {
  auto c = sqlock::connect("memory:observer-bench", {.observer = std::move(o)});
  auto l = c.make_lock("bench:" + sqlock::random_token().substr(0, 8));
  for (auto _ : state) {
    l.lock();
    l.unlock();
  }
  state.SetItemsProcessed(state.iterations());
}

void no_observer(benchmark::State& state) {
  pair_with(state, nullptr);
}
BENCHMARK(no_observer);

void quiet_logger(benchmark::State& state) {
  pair_with(state, sqlock::make_logger(sqlock::log_level::error,
                                       [](sqlock::log_level, std::string_view) {}));
}
BENCHMARK(quiet_logger);

void trace_logger(benchmark::State& state) {
  pair_with(state, sqlock::make_logger(sqlock::log_level::trace,
                                       [](sqlock::log_level, std::string_view line) {
                                         benchmark::DoNotOptimize(line.data());
                                       }));
}
BENCHMARK(trace_logger);

#ifdef SQLOCK_BENCH_PROMETHEUS
void prometheus_metrics(benchmark::State& state) {
  pair_with(state, std::make_shared<sqlock::prometheus::metrics_observer>());
}
BENCHMARK(prometheus_metrics);
#endif

}  // namespace

BENCHMARK_MAIN();
