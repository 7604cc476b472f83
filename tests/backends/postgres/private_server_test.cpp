// The PostgreSQL backend against a server that misbehaves: a PRIVATE instance (started by the
// CTest fixture private_server.sh, never the shared development server) frozen with SIGSTOP or
// restarted with `pg_ctl restart -m immediate`. Every wait, renewal and release returns by its
// deadline whatever the server does; a waiter rides out a restart and gets the lock.
// The bounds asserted are correctness bounds (deadline + a generous deadline_slack), not speed
// claims; the measured figures are printed for the notes.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>
#include <vector>

#include "freeze.hpp"
#include "pg_env.hpp"
#include "sqlock/backend.hpp"

namespace sqlock::test {
namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

long long ms_since(clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - t).count();
}

// The private instance: its URL and control script, from the fixture.
class pg_private : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ifstream in(std::string(SQLOCK_PG_PRIVATE_DIR) + "/url");
    if (!(in >> url_)) {
      if (require_all()) FAIL() << "the private PostgreSQL instance did not start";
      GTEST_SKIP() << "no private PostgreSQL instance (postgresql-15 not installed)";
    }
    sqlock::connect(pg::with(url_, "migrate=auto"));
  }
  void TearDown() override { thaw(); }

  // Every process of the instance: the postmaster and its children (backends, workers).
  std::vector<pid_t> processes() const {
    std::vector<pid_t> out;
    std::ifstream pidfile(std::string(SQLOCK_PG_PRIVATE_DIR) + "/postgres/data/postmaster.pid");
    pid_t postmaster = 0;
    if (!(pidfile >> postmaster)) return out;
    out.push_back(postmaster);
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
      auto st = read_proc_stat(e.path() / "stat");
      if (st.state != 0 && st.ppid == postmaster)
        out.push_back(static_cast<pid_t>(std::stol(e.path().filename().string())));
    }
    return out;
  }
  void freeze() {
    frozen_ = processes();
    ASSERT_FALSE(frozen_.empty());
    for (auto p : frozen_) ASSERT_TRUE(freeze_process(p)) << "backend " << p << " did not stop";
  }
  void thaw() {
    for (auto p : frozen_) ::kill(p, SIGCONT);
    frozen_.clear();
  }
  void restart() {
    std::string cmd = std::string(SQLOCK_PG_PRIVATE_CTL) + " restart " + SQLOCK_PG_PRIVATE_DIR;
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }

  std::string url_;
  std::vector<pid_t> frozen_;
};

class pg_private_modes : public pg_private, public ::testing::WithParamInterface<const char*> {};

TEST_P(pg_private_modes, frozen_server_every_call_returns_by_its_deadline) {
  const std::string mode = GetParam();
  auto a = sqlock::connect(pg::with(url_, "mode=" + mode), {.release_timeout = 1s});
  auto b = sqlock::connect(pg::with(url_, "mode=" + mode));
  auto n = unique_name("frozen");
  auto held = a.make_lock(n, {.lease = 3s});
  auto other = a.make_lock(unique_name("frozen-other"), {.lease = 30s, .auto_renew = false});
  std::atomic<bool> lost{false};
  clock::time_point lost_at{};
  held.on_lost([&](const std::string&) {
    lost_at = clock::now();
    lost = true;
  });
  // Short waits rather than single attempts: on a loaded machine one attempt may run out of its
  // own time (wait_policy::min_attempt) and be retried.
  ASSERT_TRUE(held.try_lock_for(10s));
  ASSERT_TRUE(other.try_lock_for(10s));
  auto lb = b.make_lock(n);
  EXPECT_FALSE(lb.try_lock_for(300ms));  // b's connections are open before the freeze

  freeze();
  const auto frozen_at = clock::now();
  // A wait returns by its deadline: busy (false) or the server's silence (connection_error).
  auto t = clock::now();
  try {
    EXPECT_FALSE(lb.try_lock_for(1s));
  } catch (const connection_error&) {
  }
  auto waited = ms_since(t);
  EXPECT_LE(waited, std::chrono::milliseconds(1s + deadline_slack).count());
  // A release returns by the release timeout (the server frees the hold by its lease, or
  // with its session, anyway).
  t = clock::now();
  other.unlock();
  auto released = ms_since(t);
  EXPECT_LE(released, std::chrono::milliseconds(1s + deadline_slack).count());
  // The renewals of `held` cannot get through: it is lost by the end of its lease.
  for (auto until = frozen_at + 3s + deadline_slack; !lost && clock::now() < until;)
    std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(lost.load());
  auto lost_after = std::chrono::duration_cast<std::chrono::milliseconds>(lost_at - frozen_at);
  EXPECT_LE(lost_after.count(), std::chrono::milliseconds(3s + deadline_slack).count());
  std::printf(
      "[figures] %s frozen: try_lock_for(1s) returned after %lld ms, unlock (1s bound) "
      "after %lld ms, 3s hold lost %lld ms after the freeze\n",
      mode.c_str(), waited, released, static_cast<long long>(lost_after.count()));
  thaw();
  held.unlock();  // lost: records the failure, never throws
  // After the thaw the store works again for everyone.
  auto lc = b.make_lock(unique_name("after-thaw"));
  EXPECT_TRUE(lc.try_lock_for(10s));
}

TEST_P(pg_private_modes, restart_during_a_wait_the_waiter_gets_the_lock) {
  const std::string mode = GetParam();
  auto a = sqlock::connect(pg::with(url_, "mode=" + mode));
  auto b = sqlock::connect(pg::with(url_, "mode=" + mode));
  auto n = unique_name("restart");
  auto la = a.make_lock(n, {.lease = 2s, .auto_renew = false});
  ASSERT_TRUE(la.try_lock_for(10s));
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    auto lb = b.make_lock(n);
    try {
      got = lb.try_lock_for(20s);
    } catch (const error& e) {
      ADD_FAILURE() << "the waiter gave up: " << e.what();
    }
    if (got) lb.unlock();
  });
  std::this_thread::sleep_for(300ms);  // the waiter is waiting (not required)
  restart();
  waiter.join();
  EXPECT_TRUE(got.load()) << mode;
  la.unlock();  // gone with the lease or the session: records the failure, never throws
}

INSTANTIATE_TEST_SUITE_P(modes, pg_private_modes, ::testing::Values("pessimistic", "advisory"));

}  // namespace
}  // namespace sqlock::test
