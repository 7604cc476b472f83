// The Prometheus metrics observer (see sqlock/prometheus.hpp).
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/text_serializer.h>

#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

#include "sqlock/prometheus.hpp"

namespace sqlock::prometheus {

using ::prometheus::Counter;
using ::prometheus::Family;
using ::prometheus::Gauge;
using ::prometheus::Histogram;
using ::prometheus::Labels;

// Named (not anonymous): metrics_observer::families holds these types, and a unity build
// compiles this file as a header of another, where a field of an anonymous type is an error.
namespace series_parts {

// The metrics of one label set (backend, mode, lock group), made once: after the first event of
// a label set, counting is a map lookup without allocation.
struct series {
  Counter &attempts, &acquisitions, &contended, &timeouts, &retries, &renewals, &renewal_failures,
      &losses, &releases, &release_errors;
  Gauge& holds;
  Histogram &wait, &hold;
};

using series_key = std::tuple<std::string, std::string, std::string>;

}  // namespace series_parts
using namespace series_parts;

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

  std::mutex m{};
  std::map<series_key, series, std::less<>> made{};

  // The series of one label set; `group` "" = no lock label.
  series& of(std::string_view backend, std::string_view mode, std::string_view group,
             const metrics_options& o) {
    std::lock_guard g(m);
    auto key = std::make_tuple(backend, mode, group);
    if (auto it = made.find(key); it != made.end()) return it->second;
    Labels l{{"backend", std::string(backend)}, {"mode", std::string(mode)}};
    if (!group.empty()) l.emplace("lock", std::string(group));
    series s{attempts.Add(l),
             acquisitions.Add(l),
             contended.Add(l),
             timeouts.Add(l),
             retries.Add(l),
             renewals.Add(l),
             renewal_failures.Add(l),
             losses.Add(l),
             releases.Add(l),
             release_errors.Add(l),
             holds.Add(l),
             wait.Add(l, o.wait_buckets),
             hold.Add(l, o.hold_buckets)};
    return made.emplace(series_key(std::string(backend), std::string(mode), std::string(group)), s)
        .first->second;
  }
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
    std::string group = opts_.lock_label ? opts_.lock_label(e.name) : std::string();
    auto& s = f_->of(e.backend, e.mode, group, opts_);
    auto seconds = [](std::chrono::nanoseconds d) { return static_cast<double>(d.count()) / 1e9; };
    switch (e.type) {
      case event_type::attempt:
        s.attempts.Increment();
        break;
      case event_type::acquired:
        s.acquisitions.Increment();
        if (e.contended) s.contended.Increment();
        s.holds.Increment();
        s.wait.Observe(seconds(e.wait));
        break;
      case event_type::timeout:
        s.timeouts.Increment();
        s.wait.Observe(seconds(e.wait));
        break;
      case event_type::retry:
        s.retries.Increment();
        break;
      case event_type::renewed:
        s.renewals.Increment();
        break;
      case event_type::renewal_failed:
        s.renewal_failures.Increment();
        break;
      case event_type::lost:
        s.losses.Increment();
        break;
      case event_type::released:
      case event_type::release_failed:
        (e.type == event_type::released ? s.releases : s.release_errors).Increment();
        s.holds.Decrement();
        s.hold.Observe(seconds(e.held));
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
