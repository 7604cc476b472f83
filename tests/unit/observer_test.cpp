// The observer and the logging hook against the in-process backend with injected faults: a
// scripted sequence (acquire, busy attempt, renewal, failed renewal, loss, release, failed
// release, retried connection errors) gives exactly the events and counts it should.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "sqlock/backend.hpp"
#include "sqlock/client.hpp"
#include "sqlock/memory.hpp"
#include "sqlock/random.hpp"

using namespace sqlock;
using namespace std::chrono_literals;

namespace {

// Keeps a copy of every event (the views die with the call).
struct recorded {
  event_type type;
  std::string name, backend, mode, error;
  std::uint64_t fence;
  bool contended;
  std::chrono::nanoseconds wait, held;
};

class recorder final : public observer {
 public:
  void notify(const event& e) noexcept override {
    std::lock_guard g(m_);
    events_.push_back({e.type, std::string(e.name), std::string(e.backend), std::string(e.mode),
                       std::string(e.error), e.fence, e.contended, e.wait, e.held});
  }
  std::vector<recorded> events() const {
    std::lock_guard g(m_);
    return events_;
  }
  std::vector<recorded> of(event_type t) const {
    std::vector<recorded> out;
    for (auto& e : events())
      if (e.type == t) out.push_back(e);
    return out;
  }
  std::size_t count(event_type t) const { return of(t).size(); }

 private:
  mutable std::mutex m_;
  std::vector<recorded> events_;
};

struct store {
  std::string name = "observer-" + random_token();
  std::shared_ptr<recorder> rec = std::make_shared<recorder>();
  client connect(std::shared_ptr<observer> o) {
    return client(memory::open(name), {.observer = std::move(o)});
  }
  memory::faults& faults() { return memory::faults_of(name); }
};

// No background renewal: the script decides when renewals happen.
const lock_options manual{.lease = 60s, .auto_renew = false};

// Two clients of one store, each with a handle on the same lock, both observed by `s.rec`.
struct rivals {
  client a, b;
  sqlock::mutex la, lb;
  rivals(store& s, const std::string& name)
      : a(s.connect(s.rec)),
        b(s.connect(s.rec)),
        la(a.make_lock(name, manual)),
        lb(b.make_lock(name, manual)) {}
};

}  // namespace

TEST(observer, scripted_sequence_gives_each_event_once) {
  store s;
  rivals r(s, "jobs:1");
  auto &a = r.a, &b = r.b;
  auto &la = r.la, &lb = r.lb;

  la.lock();
  ASSERT_FALSE(lb.try_lock());  // busy: an attempt and a timeout
  auto acquired = s.rec->of(event_type::acquired);
  ASSERT_EQ(acquired.size(), 1u);
  EXPECT_EQ(acquired[0].name, "jobs:1");
  EXPECT_EQ(acquired[0].backend, "memory");
  EXPECT_EQ(acquired[0].fence, la.fence());
  EXPECT_FALSE(acquired[0].contended);
  EXPECT_EQ(s.rec->count(event_type::attempt), 2u);
  EXPECT_EQ(s.rec->count(event_type::timeout), 1u);

  EXPECT_TRUE(la.renew());
  ASSERT_EQ(s.rec->count(event_type::renewed), 1u);
  EXPECT_EQ(s.rec->of(event_type::renewed)[0].fence, la.fence());

  s.faults().down = true;  // a renewal whose outcome is unknown: failed, retried later
  EXPECT_TRUE(la.renew());
  s.faults().down = false;
  auto failed = s.rec->of(event_type::renewal_failed);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_FALSE(failed[0].error.empty());

  s.faults().renew_refused = true;  // the store says the hold is gone: lost
  EXPECT_FALSE(la.renew());
  s.faults().renew_refused = false;
  auto lost = s.rec->of(event_type::lost);
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].name, "jobs:1");
  EXPECT_EQ(lost[0].fence, acquired[0].fence);
  EXPECT_GT(lost[0].held.count(), 0);
  la.unlock();
  EXPECT_EQ(s.rec->count(event_type::released) + s.rec->count(event_type::release_failed), 1u);

  lb.lock();
  s.faults().down = true;  // the release cannot reach the store
  lb.unlock();
  s.faults().down = false;
  auto rf = s.rec->of(event_type::release_failed);
  ASSERT_FALSE(rf.empty());
  EXPECT_FALSE(rf.back().error.empty());

  // Counts agree with the clients' statistics.
  auto sa = a.stats(), sb = b.stats();
  EXPECT_EQ(s.rec->count(event_type::acquired), sa.acquisitions + sb.acquisitions);
  EXPECT_EQ(s.rec->count(event_type::timeout), sa.timeouts + sb.timeouts);
  EXPECT_EQ(s.rec->count(event_type::renewed), sa.renewals + sb.renewals);
  EXPECT_EQ(s.rec->count(event_type::renewal_failed), sa.renewal_failures + sb.renewal_failures);
  EXPECT_EQ(s.rec->count(event_type::lost), sa.losses + sb.losses);
  EXPECT_EQ(s.rec->count(event_type::released), sa.releases + sb.releases);
  EXPECT_EQ(s.rec->count(event_type::release_failed), sa.release_errors + sb.release_errors);
}

TEST(observer, loss_from_a_dead_session_is_reported) {
  store s;
  auto c = s.connect(s.rec);
  auto l = c.make_lock("session", manual);
  l.lock();
  ASSERT_TRUE(memory::end_session(s.name, "session"));
  auto lost = s.rec->of(event_type::lost);
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].fence, l.fence());
  l.unlock();
}

TEST(observer, connection_errors_while_acquiring_are_retries) {
  store s;
  auto c = s.connect(s.rec);
  auto l = c.make_lock("retried", manual);
  s.faults().down = true;
  EXPECT_THROW(l.try_lock_for(300ms), connection_error);
  s.faults().down = false;
  auto retries = s.rec->of(event_type::retry);
  ASSERT_GE(retries.size(), 1u);
  EXPECT_EQ(retries[0].name, "retried");
  EXPECT_FALSE(retries[0].error.empty());
}

TEST(observer, contended_acquisitions_match_statistics) {
  store s;
  rivals r(s, "contended");
  auto &a = r.a, &b = r.b;
  auto &la = r.la, &lb = r.lb;
  la.lock();
  std::thread waiter([&] {
    lb.lock();
    lb.unlock();
  });
  // Release once the waiter has begun its attempt (whether it saw the lock busy or not, the
  // event's contended flag must agree with the statistics).
  for (int i = 0; i < 500 && s.rec->count(event_type::attempt) < 2; ++i)
    std::this_thread::sleep_for(2ms);
  la.unlock();
  waiter.join();
  auto acquired = s.rec->of(event_type::acquired);
  ASSERT_EQ(acquired.size(), 2u);
  std::uint64_t contended = 0;
  for (auto& e : acquired) contended += e.contended ? 1 : 0;
  EXPECT_EQ(contended, a.stats().contended + b.stats().contended);
  auto released = s.rec->of(event_type::released);
  ASSERT_EQ(released.size(), 2u);
}

TEST(observer, fan_out_reaches_every_target_and_skips_nulls) {
  store s;
  auto second = std::make_shared<recorder>();
  auto c = s.connect(fan_out({s.rec, nullptr, second}));
  auto l = c.make_lock("fan", manual);
  l.lock();
  l.unlock();
  EXPECT_EQ(s.rec->events().size(), 3u);  // attempt, acquired, released
  EXPECT_EQ(second->events().size(), 3u);
}

TEST(logging, silent_below_the_level_and_formats_above_it) {
  store s;
  std::mutex m;
  std::vector<std::pair<log_level, std::string>> lines;
  auto sink = [&](log_level lv, std::string_view msg) {
    std::lock_guard g(m);
    lines.emplace_back(lv, std::string(msg));
  };
  auto c = s.connect(make_logger(log_level::info, sink));
  auto a = c.make_lock("log\nme", manual);
  a.lock();
  a.unlock();
  EXPECT_TRUE(lines.empty()) << "acquired/released are debug: nothing at info";

  a.lock();
  s.faults().renew_refused = true;
  EXPECT_FALSE(a.renew());
  s.faults().renew_refused = false;
  a.unlock();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].first, log_level::error);
  EXPECT_NE(lines[0].second.find("LOST lock 'log?me' on memory"), std::string::npos)
      << lines[0].second;
  EXPECT_NE(lines[0].second.find("fence "), std::string::npos);
  EXPECT_EQ(lines[0].second.find('\n'), std::string::npos) << "control characters are masked";
}

TEST(logging, trace_sees_every_event_with_timings) {
  store s;
  std::vector<std::string> lines;
  std::mutex m;
  auto c = s.connect(make_logger(log_level::trace, [&](log_level, std::string_view msg) {
    std::lock_guard g(m);
    lines.emplace_back(msg);
  }));
  auto l = c.make_lock("orders:42", manual);
  l.lock();
  l.renew();
  l.unlock();
  ASSERT_EQ(lines.size(), 4u);  // attempt, acquired, renewed, released
  EXPECT_NE(lines[1].find("acquired lock 'orders:42' on memory"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("waited "), std::string::npos) << lines[1];
  EXPECT_NE(lines[3].find("held "), std::string::npos) << lines[3];
}

TEST(logging, off_and_null_sinks_are_silent) {
  store s;
  int calls = 0;
  auto c =
      s.connect(fan_out({make_logger(log_level::off, [&](log_level, std::string_view) { ++calls; }),
                         make_logger(log_level::trace, nullptr)}));
  auto l = c.make_lock("quiet", manual);
  l.lock();
  l.unlock();
  EXPECT_EQ(calls, 0);
}

TEST(logging, level_of_each_event) {
  EXPECT_EQ(level_of(event_type::attempt), log_level::trace);
  EXPECT_EQ(level_of(event_type::acquired), log_level::debug);
  EXPECT_EQ(level_of(event_type::timeout), log_level::info);
  EXPECT_EQ(level_of(event_type::retry), log_level::warn);
  EXPECT_EQ(level_of(event_type::lost), log_level::error);
  EXPECT_EQ(to_string(event_type::renewal_failed), "renewal_failed");
  EXPECT_EQ(to_string(log_level::warn), "warn");
}
