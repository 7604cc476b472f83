// Three PostgreSQL nodes under Patroni, synchronous mode, etcd as its store
// (scripts/servers.d/14-patroni.sh; SQLOCK_TEST_PATRONI_URL lists the three hosts with
// target_session_attrs=read-write): the leader's Patroni stopped under lock load. No name is
// held twice, row-mode fences keep rising per name across the takeover, an advisory hold on the
// old leader is reported lost at once, and the time until the first grant on the new leader is
// printed. The stopped node is started again at the end (it rejoins as a replica).
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "pg_env.hpp"
#include "sqlock/doctor.hpp"
#include "sqlock/errors.hpp"

namespace sqlock::test {
namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

// Patroni's REST API of node n (1..3) answers 200 on /leader (or /replica) for that role.
bool has_role(int n, const char* role) {
  const auto cmd =
      "curl -sf -m 2 -o /dev/null http://127.0.0.1:" + std::to_string(28007 + n) + "/" + role;
  return std::system(cmd.c_str()) == 0;
}

class patroni : public ::testing::Test {
 protected:
  void SetUp() override {
    SQLOCK_REQUIRE_URL("SQLOCK_TEST_PATRONI_URL", url_);
    dir_ = env("SQLOCK_TEST_PATRONI_DIR");
    ASSERT_FALSE(dir_.empty());
    for (int n = 1; n <= 3 && leader_ == 0; ++n)
      if (has_role(n, "leader")) leader_ = n;
    ASSERT_NE(leader_, 0) << "no Patroni leader";
    // A synchronous standby to take over (synchronous mode promotes no other): after an
    // earlier run, Patroni names one again a few seconds after the old leader rejoined.
    ASSERT_TRUE(eventually(
        [&] {
          for (int n = 1; n <= 3; ++n)
            if (n != leader_ && has_role(n, "sync")) return true;
          return false;
        },
        60s))
        << "no synchronous standby";
  }
  void TearDown() override {
    if (!stopped_) return;
    const auto nd = node_dir(leader_);
    const auto start = "runuser -u postgres -- sh -c \"nohup patroni '" + nd + "/patroni.yml' >'" +
                       nd + "/patroni.out' 2>&1 & echo \\$! >'" + nd + "/patroni.pid'\"";
    ASSERT_EQ(std::system(start.c_str()), 0) << start;
    EXPECT_TRUE(eventually([&] { return has_role(leader_, "replica"); }, 120s))
        << "node " << leader_ << " did not rejoin as a replica";
  }
  std::string node_dir(int n) const { return dir_ + "/node" + std::to_string(n); }
  std::string url_, dir_;
  int leader_ = 0;
  bool stopped_ = false;
};

// doctor through the multi-host URL: the leader, its standbys and Patroni's synchronous
// standby (sync_state is hidden from the app role; synchronous_standby_names is not).
TEST_F(patroni, doctor_names_the_leader_and_its_synchronous_standby) {
  std::string role;
  for (const auto& f : sqlock::doctor(url_, clock::now() + 20s))
    if (f.check == "role") {
      EXPECT_EQ(f.status, finding_status::ok) << f.message;
      role = f.message;
    }
  EXPECT_NE(role.find("streaming standby(s), synchronous_standby_names = 'node"), std::string::npos)
      << role;
}

TEST_F(patroni, the_leader_stopped_under_load_never_grants_a_name_twice) {
  sqlock::connect(pg::with(url_, "migrate=auto"));
  auto rows = sqlock::connect(pg::with(url_, "mode=pessimistic"));
  auto adv = sqlock::connect(pg::with(url_, "mode=advisory"));
  const std::vector<std::string> names = {unique_name("patroni-a"), unique_name("patroni-b")};
  std::vector<std::atomic<int>> holders(names.size());
  std::vector<std::uint64_t> last_fence(names.size());  // by the name's holder only
  std::atomic<int> most{0};
  std::atomic<long> acquired{0}, falling{0}, errors{0};
  std::atomic<clock::rep> last_grant{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (unsigned k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      for (unsigned i = k; !stop; ++i) {
        const auto n = i % names.size();
        try {
          auto m = rows.make_lock(names[n], {.lease = 10s});
          if (!m.try_lock_for(30s)) continue;
          const int now = ++holders[n];
          for (int seen = most; now > seen && !most.compare_exchange_weak(seen, now);) {
          }
          if (m.fence() <= last_fence[n]) ++falling;
          last_fence[n] = m.fence();
          last_grant = clock::now().time_since_epoch().count();
          std::this_thread::sleep_for(2ms);
          --holders[n];
          ++acquired;
          m.unlock();
        } catch (const sqlock::error&) {
          ++errors;
          std::this_thread::sleep_for(100ms);
        }
      }
    });
  auto a = adv.make_lock(unique_name("patroni-adv"));
  ASSERT_TRUE(a.try_lock_for(10s));
  std::this_thread::sleep_for(1s);
  const auto before = acquired.load();

  std::ifstream pid_file(node_dir(leader_) + "/patroni.pid");
  pid_t pid = 0;
  pid_file >> pid;
  ASSERT_GT(pid, 0);
  const auto stopped_at = clock::now();
  ASSERT_EQ(::kill(pid, SIGTERM), 0);  // Patroni stops PostgreSQL and gives up the leader key
  stopped_ = true;

  EXPECT_TRUE(eventually([&] { return a.lost(); }, 15s)) << "advisory hold not reported lost";
  const auto lost_after = clock::now() - stopped_at;
  a.unlock();
  // The first grant on the new leader: a grant after the old one's PostgreSQL is down.
  EXPECT_TRUE(eventually(
      [&] {
        int other = 0;
        for (int n = 1; n <= 3; ++n)
          if (n != leader_ && has_role(n, "leader")) other = n;
        return other != 0 && acquired > before + 20;
      },
      60s))
      << "no new leader granting";
  const auto takeover = clock::now() - stopped_at;
  stop = true;
  for (auto& t : threads) t.join();
  const auto ms = [](clock::duration d) {
    return static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
  };
  std::printf(
      "patroni: leader node %d stopped; advisory hold lost after %lld ms; the new leader "
      "granting within %lld ms; %ld acquisitions, %ld errors\n",
      leader_, ms(lost_after), ms(takeover), acquired.load(), errors.load());
  EXPECT_EQ(most, 1) << "a name was held twice";
  EXPECT_EQ(falling, 0) << "a fence went back";
}

}  // namespace
}  // namespace sqlock::test
