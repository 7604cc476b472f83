// The MySQL advisory mode's session model and schema versions 2-4: many holds on a few
// sessions, waits in the server that never hold up a release, waiters beyond the bound polling,
// the MEMORY hold records (written in the background, stale after a plain release, ignored),
// the fence's own lock, force_release ending a shared session, `sqlock migrate` from version 1
// with a hold of the old routines live, and a stop ending a wait in the server at once.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "backends/mysql/dialect.hpp"
#include "mysql_env.hpp"
#include "recorded_holds.hpp"
#include "sqlock/client.hpp"
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

// Waits (up to 10 s) until `sql` answers `want`; returns its last answer.
std::string await_single(sql::engine_backend& b, const std::string& sql, const std::string& want) {
  auto got = single(query(b, sql));
  for (auto until = std::chrono::steady_clock::now() + 10s;
       got != want && std::chrono::steady_clock::now() < until; got = single(query(b, sql)))
    std::this_thread::sleep_for(10ms);
  return got;
}

// MariaDB's lean pair (schema version 4): the lock call writes nothing, a hold is recorded in
// the background once it lasts, its fence is known to fence_check at once (the lock
// 'sqlock!<fence>'), and a released hold's record goes stale without a write.
TEST_F(mysql_server, lean_holds_are_recorded_once_they_last_and_fenced_at_once) {
  auto dba = raw_backend(mode_url("pessimistic"));  // the schema's owner: reads the tables
  if (single(query(*dba, "SELECT @@version LIKE '%MariaDB%'")) != "1")
    GTEST_SKIP() << "the lean pair runs on MariaDB only (MySQL 8 has no sequences)";
  auto records = [&](const std::string& n) {
    return single(query(*dba,
                        "SELECT COUNT(*) FROM sqlock_advisory_holds WHERE lock_name = "
                        "sqlock_lock_name('" +
                            n + "') AND fenced = 1"));
  };
  auto fence_check = [&](const std::string& n, std::uint64_t f) {
    return single(
        query(*dba, "CALL sqlock_advisory_fence_check('" + n + "', " + std::to_string(f) + ")"));
  };
  // record_after=60s: nothing of a's is recorded by itself during the test.
  auto a = connect(with_param(mode_url("advisory"), "record_after", "60s"));
  auto b = connect(mode_url("advisory"));
  // A short hold writes nothing.
  auto brief = unique_name("rec-brief");
  {
    auto l = a.make_lock(brief);
    ASSERT_TRUE(l.try_lock());
    l.unlock();
  }
  EXPECT_EQ(records(brief), "0");
  // A hold not recorded yet: fence_check knows its fence at once; other processes do not list
  // it, force_release() finds it all the same (below).
  auto n = unique_name("rec-hold");
  auto l = a.make_lock(n);
  ASSERT_TRUE(l.try_lock());
  EXPECT_TRUE(l.renew());
  EXPECT_EQ(records(n), "0");
  EXPECT_TRUE(b.list(n).empty());
  EXPECT_EQ(fence_check(n, l.fence()), "1");
  EXPECT_EQ(fence_check(n, l.fence() - 1), "0");
  EXPECT_EQ(fence_check(n, l.fence() + 1), "0");
  // The holding process's list() records its holds first: then everyone sees it.
  expect_listed_once_recorded(a, b, l);
  // A recorded hold released with the plain statement: its record stays but counts no more,
  // also when the same session takes the name again before the new hold's record.
  const auto old_fence = l.fence();
  l.unlock();
  EXPECT_EQ(records(n), "1");
  EXPECT_TRUE(b.list(n).empty());
  auto again = a.make_lock(n);
  ASSERT_TRUE(again.try_lock());
  EXPECT_TRUE(b.list(n).empty()) << "the stale record must not show the new hold as the old";
  EXPECT_EQ(fence_check(n, old_fence), "0");
  EXPECT_EQ(fence_check(n, again.fence()), "1");
  expect_force_release_ends_it(b, again);  // the unrecorded hold's session, found by IS_USED_LOCK
  // record_after=0: recorded in the background without anyone asking, the full name of a
  // hashed GET_LOCK name with it.
  auto c = connect(with_param(mode_url("advisory"), "record_after", "0s"));
  auto z = unique_name("Rec-Now") + " x";
  auto lz = c.make_lock(z);
  ASSERT_TRUE(lz.try_lock());
  EXPECT_EQ(await_single(*dba,
                         "SELECT COUNT(*) FROM sqlock_advisory_holds h JOIN sqlock_advisory_names "
                         "m ON m.lock_name = h.lock_name WHERE m.name = '" +
                             z + "' AND h.fence = " + std::to_string(lz.fence()),
                         "1"),
            "1");
  EXPECT_TRUE(lz.renew());
  lz.unlock();
  auto lz2 = b.make_lock(z);
  EXPECT_TRUE(lz2.try_lock()) << "released on the name the server holds";
  lz2.unlock();
}

// A record of the routines of versions 2 and 3 (fenced = 0: no fence lock) keeps its meaning
// after the migration to version 4: listed, fenced and released as before.
TEST_F(mysql_server, a_record_without_a_fence_lock_counts_while_its_session_holds_the_name) {
  auto dba = raw_backend(with_param(mode_url("pessimistic"), "pool", "1"));
  auto c = connect(mode_url("advisory"));
  const auto n = unique_name("v3-hold");
  // As a version-3 sqlock_advisory_acquire did: GET_LOCK and the record, no fence lock.
  query(*dba, "DO GET_LOCK(sqlock_lock_name('" + n + "'), 0)");
  query(*dba,
        "REPLACE INTO sqlock_advisory_holds (lock_name, owner, fence, connection_id, "
        "acquired_at, holder) VALUES (sqlock_lock_name('" +
            n + "'), 'v3-owner', 77, CONNECTION_ID(), UTC_TIMESTAMP(6), 'v3 holder')");
  auto rows = c.list(n);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].owner, "v3-owner");
  EXPECT_EQ(rows[0].fence, 77u);
  EXPECT_EQ(single(query(*dba, "CALL sqlock_advisory_fence_check('" + n + "', 77)")), "1");
  EXPECT_EQ(single(query(*dba, "CALL sqlock_advisory_renew('" + n + "', 'v3-owner')")), "1");
  EXPECT_FALSE(c.make_lock(n).try_lock());
  EXPECT_EQ(single(query(*dba, "CALL sqlock_advisory_release('" + n + "', 'v3-owner')")), "1");
  EXPECT_TRUE(c.list(n).empty());
  auto l = c.make_lock(n);
  EXPECT_TRUE(l.try_lock());
  l.unlock();
}

// A kill -9 of MariaDB can lose the sequence's last cache refills (they are logged outside any
// committed transaction): measured in a long chaos run, the sequence went back by ~2,000 after
// a restart. Fences stay above every earlier one all the same: the restart empties the MEMORY
// table of the live epoch, and the epoch is raised durably before the next fence is made — by
// the library on each new session, by sqlock_advisory_acquire itself. Simulated here in the
// database of its own: the sequence sent back and the live epoch gone, as such a restart
// leaves them.
TEST_F(mysql_server, fences_rise_over_a_restart_that_sent_the_sequence_back) {
  std::string empty;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_EMPTY_URL", empty);
  with_empty_database(empty, [&] {
    auto admin = raw_backend(with_param(empty, "pool", "1"));
    if (single(query(*admin, "SELECT @@version LIKE '%MariaDB%'")) != "1")
      GTEST_SKIP() << "MariaDB's sequence; MySQL 8 takes fences from the counter row";
    drop_everything(*admin);
    auto mode = with_param(empty, "mode", "advisory");
    raw_backend(mode)->migrate();
    const auto n = unique_name("epoch");
    auto before = connect(mode);
    auto l = before.make_lock(n);
    ASSERT_TRUE(l.try_lock());
    const auto f1 = l.fence();
    l.unlock();
    auto restart = [&] {
      query(*admin, "ALTER SEQUENCE sqlock_fence_seq RESTART WITH 1");
      query(*admin, "DELETE FROM sqlock_fence_epoch_live");
    };
    restart();
    // Until the epoch is raised, the lean pair refuses and takes nothing.
    EXPECT_THROW(query(*admin, "SELECT sqlock_advisory_lock(sqlock_lock_name('" + n + "'), 0)"),
                 error);
    EXPECT_EQ(single(query(*admin, "SELECT IS_USED_LOCK(sqlock_lock_name('" + n + "'))")), "NULL");
    auto after = connect(mode);  // new sessions, as after a real restart
    auto l2 = after.make_lock(n);
    ASSERT_TRUE(l2.try_lock());
    EXPECT_GT(l2.fence(), f1);
    const auto f2 = l2.fence();
    l2.unlock();
    // The procedure raises the epoch itself.
    restart();
    auto r = query(*admin, "CALL sqlock_advisory_acquire('" + n + "', 'sql-owner', 'h', 0)");
    ASSERT_NE(single(r), "NULL");
    EXPECT_GT(std::stoull(single(r)), f2);
    query(*admin, "CALL sqlock_advisory_release('" + n + "', 'sql-owner')");
    EXPECT_EQ(single(query(*admin, "SELECT value FROM sqlock_counters WHERE name = 'fence_epoch'")),
              "3");
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
