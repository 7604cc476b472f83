// sqlock::prometheus: the metrics a scripted sequence (including a loss) leaves on the registry,
// read back through a small test-only parser of the Prometheus text format.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>

#include "sqlock/client.hpp"
#include "sqlock/memory.hpp"
#include "sqlock/prometheus.hpp"
#include "sqlock/random.hpp"

using namespace sqlock;
using namespace std::chrono_literals;

namespace {

// "name{labels} value" lines → value by "name{labels}"; comments checked for HELP/TYPE pairs.
std::map<std::string, double> parse(const std::string& text) {
  std::map<std::string, double> samples;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line[0] == '#') {
      EXPECT_TRUE(line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) << line;
      continue;
    }
    auto space = line.rfind(' ');
    EXPECT_NE(space, std::string::npos) << line;
    samples[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return samples;
}

double value(const std::map<std::string, double>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? -1 : it->second;
}

struct store {
  std::string name = "prometheus-" + random_token();
  memory::faults& faults() { return memory::faults_of(name); }
};

const lock_options manual{.lease = 60s, .auto_renew = false};

}  // namespace

TEST(prometheus, scripted_sequence_with_a_loss) {
  store s;
  auto metrics = std::make_shared<sqlock::prometheus::metrics_observer>();
  client a(memory::open(s.name), {.observer = metrics});
  client b(memory::open(s.name), {.observer = metrics});
  auto la = a.make_lock("x", manual);
  auto lb = b.make_lock("x", manual);
  la.lock();
  EXPECT_FALSE(lb.try_lock());
  EXPECT_TRUE(la.renew());
  s.faults().renew_refused = true;
  EXPECT_FALSE(la.renew());
  s.faults().renew_refused = false;
  la.unlock();
  lb.lock();  // still held: the holds gauge shows it

  auto m = parse(sqlock::prometheus::text(*metrics->registry()));
  const std::string l = R"({backend="memory",mode=""})";
  EXPECT_EQ(value(m, "sqlock_acquire_attempts_total" + l), 3);
  EXPECT_EQ(value(m, "sqlock_acquisitions_total" + l), 2);
  EXPECT_EQ(value(m, "sqlock_acquire_timeouts_total" + l), 1);
  EXPECT_EQ(value(m, "sqlock_renewals_total" + l), 1);
  EXPECT_EQ(value(m, "sqlock_losses_total" + l), 1);
  EXPECT_EQ(value(m, "sqlock_releases_total" + l), 1);
  EXPECT_EQ(value(m, "sqlock_holds" + l), 1);
  EXPECT_EQ(value(m, "sqlock_acquire_wait_seconds_count" + l), 3);  // 2 acquired + 1 timeout
  EXPECT_EQ(value(m, "sqlock_hold_seconds_count" + l), 1);
  EXPECT_EQ(value(m, R"(sqlock_hold_seconds_bucket{backend="memory",mode="",le="+Inf"})"), 1);
  lb.unlock();
  m = parse(sqlock::prometheus::text(*metrics->registry()));
  EXPECT_EQ(value(m, "sqlock_holds" + l), 0);
  EXPECT_EQ(value(m, "sqlock_releases_total" + l), 2);
}

TEST(prometheus, lock_label_only_when_the_application_groups_names) {
  store s;
  auto grouped = std::make_shared<sqlock::prometheus::metrics_observer>(
      nullptr, sqlock::prometheus::metrics_options{
                   .prefix = "app_locks", .lock_label = sqlock::prometheus::name_prefix(':')});
  client c(memory::open(s.name), {.observer = grouped});
  for (auto name : {"orders:1", "orders:2", "invoices:7"}) {
    auto l = c.make_lock(name, manual);
    l.lock();
    l.unlock();
  }
  auto m = parse(sqlock::prometheus::text(*grouped->registry()));
  EXPECT_EQ(value(m, R"(app_locks_acquisitions_total{backend="memory",lock="orders",mode=""})"), 2);
  EXPECT_EQ(value(m, R"(app_locks_acquisitions_total{backend="memory",lock="invoices",mode=""})"),
            1);
  EXPECT_EQ(sqlock::prometheus::name_prefix(':', 3)("abcdef"), "abc");
}

TEST(prometheus, one_registry_shared_with_the_application) {
  auto registry = std::make_shared<::prometheus::Registry>();
  auto metrics = std::make_shared<sqlock::prometheus::metrics_observer>(registry);
  EXPECT_EQ(metrics->registry(), registry);
  client c(memory::open("prometheus-" + random_token()), {.observer = metrics});
  auto l = c.make_lock("shared", manual);
  l.lock();
  l.unlock();
  auto text = sqlock::prometheus::text(*registry);
  EXPECT_NE(text.find("# TYPE sqlock_releases_total counter"), std::string::npos);
  EXPECT_NE(text.find("# TYPE sqlock_hold_seconds histogram"), std::string::npos);
}
