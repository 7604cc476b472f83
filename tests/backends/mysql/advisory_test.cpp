// The MySQL advisory mode's session model and schema version 2: many holds on a few sessions,
// waits in the server that never hold up a release, waiters beyond the bound polling, the
// MEMORY hold records (stale after a plain release, ignored), force_release ending a shared
// session, `sqlock migrate` from version 1 with a hold of the old routines live, and a stop
// ending a wait in the server at once.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "mysql_env.hpp"
#include "sqlock/client.hpp"
#include "sqlock/mysql/dialect.hpp"
#include "stop_anywhere.hpp"
#include "test_env.hpp"

namespace sqlock::test {
namespace {

using namespace std::chrono_literals;

std::string read_fixture(const std::string& file) {
  std::ifstream in(std::string(SQLOCK_MYSQL_FIXTURES) + "/" + file);
  if (!in) throw error("cannot read test fixture " + file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Drops every table, sequence and routine of the connected database.
void drop_everything(sql::engine_backend& b) {
  b.with_connection([&](sql::connection& c) {
    for (auto& r : c.query("SELECT table_name, table_type FROM information_schema.tables "
                           "WHERE table_schema = DATABASE()")) {
      const char* what = *r[1] == "SEQUENCE" ? "SEQUENCE" : "TABLE";
      c.query(std::string("DROP ") + what + " IF EXISTS `" + *r[0] + "`");
    }
    for (auto& r : c.query("SELECT routine_name, routine_type FROM information_schema.routines "
                           "WHERE routine_schema = DATABASE()"))
      c.query("DROP " + *r[1] + " IF EXISTS `" + *r[0] + "`");
  });
}

TEST_F(mysql_server, a_thousand_holds_ride_on_a_few_sessions) {
  std::string admin;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_ADMIN_URL", admin);
  auto c = connect(mode_url("advisory"));
  const std::string prefix = unique_name("many") + "-";
  std::vector<mutex> held;
  held.reserve(1000);
  for (int i = 0; i < 1000; ++i) {
    held.push_back(c.make_lock(prefix + std::to_string(i)));
    // Not try_lock(): a call that outlives its deadline ends its session, and every hold on it.
    ASSERT_TRUE(held.back().try_lock_for(30s)) << i;
  }
  // Which server sessions hold them (MariaDB's seq_0_to_999 numbers the names).
  auto killer = raw_backend(admin);
  auto sessions =
      single(query(*killer, "SELECT COUNT(DISTINCT IS_USED_LOCK(CONCAT('sqlock:" + prefix +
                                "', seq))) FROM seq_0_to_999"));
  auto free = single(query(*killer,
                           "SELECT COUNT(*) FROM seq_0_to_999 WHERE IS_USED_LOCK("
                           "CONCAT('sqlock:" +
                               prefix + "', seq)) IS NULL"));
  EXPECT_EQ(free, "0");
  EXPECT_LE(std::stoi(sessions), 6) << "pool (4) + waiters (2) bound the sessions";
  EXPECT_EQ(c.list(prefix).size(), 1000u);
  for (auto& l : held) l.unlock();
  EXPECT_TRUE(c.list(prefix).empty()) << "released holds' stale records are not listed";
}

TEST_F(mysql_server, a_wait_in_the_server_never_holds_up_a_release) {
  // x's server-side waits may last up to its deadline (timeout 120s: chunks of ~60 s). Were the
  // release of `a` queued behind the wait, it would return only once that wait gave up.
  auto x = connect(with_param(mode_url("advisory"), "timeout", "120s"));
  auto y = connect(mode_url("advisory"));
  auto a = x.make_lock(unique_name("held"));
  auto bn = unique_name("waited");
  ASSERT_TRUE(a.try_lock());
  auto yb = y.make_lock(bn);
  ASSERT_TRUE(yb.try_lock());
  auto waiter = std::async(std::launch::async, [&] {
    auto xb = x.make_lock(bn);
    bool got = xb.try_lock_for(60s);  // waits in GET_LOCK, on a session of x carrying no hold
    if (got) xb.unlock();
    return got;
  });
  std::this_thread::sleep_for(500ms);  // lets the waiter reach the server (not a bound)
  a.unlock();                          // on the session carrying `a`, not the waiting one
  EXPECT_NE(waiter.wait_for(0s), std::future_status::ready)
      << "the release returned only after the wait gave up";
  EXPECT_TRUE(y.make_lock(a.name()).try_lock());
  yb.unlock();  // the server hands `bn` to x's waiter
  EXPECT_TRUE(waiter.get());
}

TEST_F(mysql_server, waiters_beyond_the_bound_poll_and_all_get_the_lock) {
  auto c = connect(with_param(mode_url("advisory"), "waiters", "1"));
  auto n = unique_name("bound");
  std::atomic<int> inside{0}, overlaps{0}, done{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&] {
      auto l = c.make_lock(n);
      for (int i = 0; i < 10; ++i) {
        if (!l.try_lock_for(60s)) continue;
        if (inside.fetch_add(1) != 0) ++overlaps;
        std::this_thread::sleep_for(2ms);
        inside.fetch_sub(1);
        l.unlock();
        ++done;
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(done.load(), 40);
  EXPECT_EQ(overlaps.load(), 0);
}

TEST_F(mysql_server, force_release_ends_the_shared_session_and_its_other_holds_are_lost) {
  std::string admin;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_ADMIN_URL", admin);
  auto c = connect(mode_url("advisory"));
  auto other = connect(mode_url("advisory"));
  auto a = c.make_lock(unique_name("forced"));
  auto b = c.make_lock(unique_name("beside"));
  std::atomic<int> lost{0};
  a.on_lost([&](const std::string&) { ++lost; });
  b.on_lost([&](const std::string&) { ++lost; });
  ASSERT_TRUE(a.try_lock());
  ASSERT_TRUE(b.try_lock());  // one session carries both
  EXPECT_TRUE(other.force_release(a.name()));
  auto until = std::chrono::steady_clock::now() + 30s;  // liveness bound only
  while (lost < 2 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(lost.load(), 2);
  EXPECT_TRUE(a.lost());
  EXPECT_TRUE(b.lost());
  EXPECT_TRUE(other.make_lock(b.name()).try_lock());
}

TEST_F(mysql_server, migration_from_version_1_keeps_a_live_hold_of_the_old_routines) {
  std::string empty;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_EMPTY_URL", empty);
  with_empty_database(empty, [&] {
    auto admin = raw_backend(empty);
    drop_everything(*admin);  // a run that died before its clean-up
    const auto& bundle = mysql::sql_bundle();
    admin->with_connection([&](sql::connection& c) {  // schema version 1, as it shipped
      c.execute_script(bundle.migrations.at(0).text);
      c.execute_script(bundle.routine("00_functions.sql"));
      c.execute_script(read_fixture("v1_advisory.sql"));
      c.execute_script(bundle.routine("version.sql"));
    });
    ASSERT_EQ(single(query(*admin, "SELECT sqlock_schema_version()")), "1");

    // A hold of the version-1 routines on a session of its own (pool=1 keeps that session).
    auto old = raw_backend(with_param(empty, "pool", "1"));
    const auto n = unique_name("v1");
    auto r = query(*old, "CALL sqlock_advisory_acquire('" + n + "', 'v1-owner', 'v1 holder', 0)");
    const auto f1 = single(r);
    ASSERT_NE(f1, "NULL");

    auto mode = with_param(empty, "mode", "advisory");
    EXPECT_EQ(raw_backend(mode)->migrate(), sql::latest_version(bundle));
    auto c = connect(mode);
    auto rows = c.list(n);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].owner, "v1-owner");
    EXPECT_EQ(std::to_string(rows[0].fence), f1);
    EXPECT_EQ(rows[0].holder, "v1 holder");
    EXPECT_EQ(single(query(*admin, "CALL sqlock_advisory_fence_check('" + n + "', " + f1 + ")")),
              "1");
    auto l = c.make_lock(n);
    EXPECT_FALSE(l.try_lock());
    // The old client releases with the (now new) release routine.
    EXPECT_EQ(single(query(*old, "CALL sqlock_advisory_release('" + n + "', 'v1-owner')")), "1");
    EXPECT_TRUE(c.list(n).empty());
    ASSERT_TRUE(l.try_lock());
    EXPECT_GT(l.fence(), std::stoull(f1)) << "fences keep rising across the migration";
    EXPECT_EQ(single(query(*admin, "CALL sqlock_advisory_fence_check('" + n + "', " +
                                       std::to_string(l.fence()) + ")")),
              "1");
    l.unlock();
    drop_everything(*admin);
  });
}

// A stop at any moment of a wait ends it long before its deadline — in GET_LOCK (woken by
// KILL QUERY from a second session, which the server forgets when it arrives before the
// statement), in the first try, or between the two — and leaves no waiter in the server.
// 100 stops spread over the first 5 ms; waits in the server of up to ~15 s (timeout=30s).
TEST_F(mysql_server, a_stop_at_any_moment_of_a_wait_ends_it) {
  auto name = unique_name("stop-any");
  auto a = connect(mode_url("advisory"));
  auto b = connect(with_param(mode_url("advisory"), "timeout", "30s"));
  auto la = a.make_lock(name);
  ASSERT_TRUE(la.try_lock());
  auto lb = b.make_lock(name);
  EXPECT_EQ(waits_a_stop_missed(lb), 0) << "stopped waits that ran (nearly) to their deadline";
  la.unlock();
  auto c = connect(mode_url("advisory"));
  auto lc = c.make_lock(name);
  EXPECT_TRUE(lc.try_lock()) << "a stopped waiter still stands in the server's queue";
}

}  // namespace
}  // namespace sqlock::test
