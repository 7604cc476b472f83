// The Prometheus metrics observer (see sqlock/prometheus.hpp).
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/text_serializer.h>

#include <sstream>

#include "sqlock/prometheus.hpp"

namespace sqlock::prometheus {

using ::prometheus::Counter;
using ::prometheus::Family;
using ::prometheus::Gauge;
using ::prometheus::Histogram;
using ::prometheus::Labels;

struct metrics_observer::families {
  Family<Counter>& attempts;
  Family<Counter>& acquisitions;
  Family<Counter>& contended;
  Family<Counter>& timeouts;
  Family<Counter>& retries;
  Family<Counter>& renewals;
  Family<Counter>& renewal_failures;
  Family<Counter>& losses;
  Family<Counter>& releases;
  Family<Counter>& release_errors;
  Family<Gauge>& holds;
  Family<Histogram>& wait;
  Family<Histogram>& hold;
};

namespace {

std::string metric(const metrics_options& o, const char* name) {
  return o.prefix.empty() ? name : o.prefix + "_" + name;
}

Family<Counter>& counter(::prometheus::Registry& r, const metrics_options& o, const char* name,
                         const char* help) {
  return ::prometheus::BuildCounter().Name(metric(o, name)).Help(help).Register(r);
}

Family<Histogram>& histogram(::prometheus::Registry& r, const metrics_options& o, const char* name,
                             const char* help) {
  return ::prometheus::BuildHistogram().Name(metric(o, name)).Help(help).Register(r);
}

}  // namespace

lock_grouping name_prefix(char separator, std::size_t max_length) {
  return [separator, max_length](std::string_view name) {
    auto cut = name.find(separator);
    if (cut != std::string_view::npos) name = name.substr(0, cut);
    return std::string(name.substr(0, max_length));
  };
}

metrics_observer::metrics_observer(std::shared_ptr<::prometheus::Registry> registry,
                                   metrics_options opts)
    : registry_(registry ? std::move(registry) : std::make_shared<::prometheus::Registry>()),
      opts_(std::move(opts)) {
  auto& r = *registry_;
  const auto& o = opts_;
  f_.reset(new families{
      counter(r, o, "acquire_attempts_total", "lock()/try_lock() calls that went to the backend"),
      counter(r, o, "acquisitions_total", "holds obtained from the backend"),
      counter(r, o, "contended_acquisitions_total",
              "holds obtained after waiting for another holder"),
      counter(r, o, "acquire_timeouts_total", "try_lock/try_lock_for calls that gave up"),
      counter(r, o, "acquire_retries_total",
              "attempts that failed with a connection error and were retried"),
      counter(r, o, "renewals_total", "successful lease renewals"),
      counter(r, o, "renewal_failures_total", "renewals that failed with an error (retried)"),
      counter(r, o, "losses_total", "holds found lost (renewal refused, lease ran out)"),
      counter(r, o, "releases_total", "holds released"),
      counter(r, o, "release_errors_total", "releases that failed (the lease ends on the server)"),
      ::prometheus::BuildGauge()
          .Name(metric(o, "holds"))
          .Help("holds this process has now")
          .Register(r),
      histogram(r, o, "acquire_wait_seconds", "time from lock() to the hold (or to giving up)"),
      histogram(r, o, "hold_seconds", "time from acquisition to release"),
  });
}

metrics_observer::~metrics_observer() = default;

void metrics_observer::notify(const event& e) noexcept {
  try {
    Labels l{{"backend", std::string(e.backend)}, {"mode", std::string(e.mode)}};
    if (opts_.lock_label) {
      if (auto group = opts_.lock_label(e.name); !group.empty()) l.emplace("lock", group);
    }
    auto seconds = [](std::chrono::nanoseconds d) { return static_cast<double>(d.count()) / 1e9; };
    auto& f = *f_;
    switch (e.type) {
      case event_type::attempt:
        f.attempts.Add(l).Increment();
        break;
      case event_type::acquired:
        f.acquisitions.Add(l).Increment();
        if (e.contended) f.contended.Add(l).Increment();
        f.holds.Add(l).Increment();
        f.wait.Add(l, opts_.wait_buckets).Observe(seconds(e.wait));
        break;
      case event_type::timeout:
        f.timeouts.Add(l).Increment();
        f.wait.Add(l, opts_.wait_buckets).Observe(seconds(e.wait));
        break;
      case event_type::retry:
        f.retries.Add(l).Increment();
        break;
      case event_type::renewed:
        f.renewals.Add(l).Increment();
        break;
      case event_type::renewal_failed:
        f.renewal_failures.Add(l).Increment();
        break;
      case event_type::lost:
        f.losses.Add(l).Increment();
        break;
      case event_type::released:
        f.releases.Add(l).Increment();
        f.holds.Add(l).Decrement();
        f.hold.Add(l, opts_.hold_buckets).Observe(seconds(e.held));
        break;
      case event_type::release_failed:
        f.release_errors.Add(l).Increment();
        f.holds.Add(l).Decrement();
        f.hold.Add(l, opts_.hold_buckets).Observe(seconds(e.held));
        break;
    }
  } catch (...) {
    // Metrics must never reach the lock (an invalid label value, out of memory).
  }
}

std::string text(const ::prometheus::Registry& registry) {
  std::ostringstream out;
  ::prometheus::TextSerializer().Serialize(out, registry.Collect());
  return out.str();
}

}  // namespace sqlock::prometheus
