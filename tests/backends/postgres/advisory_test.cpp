// Advisory mode beyond the conformance suite: `sqlock migrate` to version 4 with a hold of the
// version-3 routines live, keys computed by the client (version 9) meeting the server's, holds
// recorded for other processes only once they last (and fenced at once), waiters inside the
// server and on the notification path, and the connections one process uses for many holds and
// waiters.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "backends/postgres/dialect.hpp"
#include "pg_env.hpp"
#include "recorded_holds.hpp"
#include "sql/sql_engine.hpp"
#include "sqlock/postgres/xact_lock.hpp"
#include "stop_anywhere.hpp"

namespace sqlock::test {
namespace {

using namespace std::chrono_literals;

// Polls `query` (one integer) on a DBA session until it returns at least `want`, for up to
// 10 s; the last value.
int await_count(pqxx::connection& dc, const std::string& query, int want) {
  int got = 0;
  for (auto until = std::chrono::steady_clock::now() + 10s;
       std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(10ms)) {
    pqxx::nontransaction tx(dc);
    got = tx.exec1(query)[0].as<int>();
    if (got >= want) break;
  }
  return got;
}

// Holds `name` through `a` while a thread waits for it through `b`; releases it once `seen` (a
// count on `dc`) shows the wait. The fences of a's hold and of the hold b then got (0: none).
std::pair<std::uint64_t, std::uint64_t> hand_over(client& a, client& b, const std::string& name,
                                                  pqxx::connection& dc, const std::string& seen) {
  auto la = a.make_lock(name);
  EXPECT_TRUE(la.try_lock());
  std::uint64_t got = 0;
  std::thread t([&] {
    auto lb = b.make_lock(name);
    if (lb.try_lock_for(20s)) {
      got = lb.fence();
      lb.unlock();
    }
  });
  EXPECT_EQ(await_count(dc, seen, 1), 1);
  auto first = la.fence();
  la.unlock();
  t.join();
  return {first, got};
}

TEST_F(postgres, migrate_to_v4_keeps_a_live_hold_of_the_v3_routines) {
  std::string schema = "sqlock_v3_" + random_token().substr(0, 8);
  schema_guard guard(owner_, schema);
  const auto& b = sqlock::postgres::bundle();
  // Version 3 of the schema, with the helpers of 00_common.sql (unchanged since).
  pqxx::connection holder(owner_);
  for (const auto& f : b.migrations) {
    if (sql::migration_version(f.name) > 3) continue;
    pqxx::nontransaction tx(holder);
    tx.exec(sqlock::postgres::render(f.text, schema, ""));
  }
  {
    pqxx::nontransaction tx(holder);
    tx.exec(sqlock::postgres::render(b.routine("00_common.sql"), schema, ""));
  }
  // A hold taken as version 3's acquire_advisory took it: the session lock and a row with a
  // fence from the logged sequence.
  auto name = unique_name("v3-hold");
  std::uint64_t old_fence = 0;
  {
    pqxx::nontransaction tx(holder);
    ASSERT_TRUE(tx.exec_params1("SELECT pg_try_advisory_lock(" + schema + ".lock_key($1))", name)[0]
                    .as<bool>());
    old_fence = tx.exec_params1("INSERT INTO " + schema +
                                    ".advisory_holds (name, key, owner, fence, backend_pid, "
                                    "acquired_at, holder) VALUES ($1, " +
                                    schema + ".lock_key($1), 'v3-owner', nextval('" + schema +
                                    ".fence_seq'), pg_backend_pid(), clock_timestamp(), 'v3') "
                                    "RETURNING fence",
                                name)[0]
                    .as<std::uint64_t>();
  }
  auto owner = pg::with(owner_, "schema=" + schema);
  sqlock::connect(pg::with(owner, "migrate=auto"));  // V004 and the new routines, hold live

  auto c = sqlock::connect(pg::with(owner, "mode=advisory"));
  auto listed = c.list(name);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].fence, old_fence);
  EXPECT_EQ(listed[0].owner, "v3-owner");
  {
    auto dc = dba();
    pqxx::work tx(dc);
    EXPECT_TRUE(sqlock::postgres::fence_check(tx, name, old_fence, schema));
  }
  auto l = c.make_lock(name);
  EXPECT_FALSE(l.try_lock());  // still held by the old session
  {
    pqxx::nontransaction tx(holder);
    EXPECT_TRUE(tx.exec_params1("SELECT " + schema + ".release_advisory($1, 'v3-owner')", name)[0]
                    .as<bool>());
  }
  EXPECT_TRUE(c.list(name).empty());
  ASSERT_TRUE(l.try_lock());
  EXPECT_GT(l.fence(), old_fence);  // fences keep rising across the migration
  auto again = l.fence();
  l.unlock();
  ASSERT_TRUE(l.try_lock());
  EXPECT_GT(l.fence(), again);
  l.unlock();
}

// The rows of sqlock.advisory_holds naming `name` (a DBA's count).
int hold_rows(pqxx::connection& dc, const std::string& name) {
  pqxx::nontransaction tx(dc);
  return tx.exec_params1("SELECT count(*) FROM sqlock.advisory_holds WHERE name = $1", name)[0]
      .as<int>();
}

TEST_F(postgres, advisory_holds_are_recorded_once_they_last_and_fenced_at_once) {
  // record_after=60s: nothing of a's is recorded by itself during the test.
  auto a = sqlock::connect(pg::with(app_, "mode=advisory&record_after=60s"));
  auto b = sqlock::connect(pg::with(app_, "mode=advisory"));
  auto dc = dba();
  // A short hold writes nothing.
  auto brief = unique_name("rec-brief");
  {
    auto l = a.make_lock(brief);
    ASSERT_TRUE(l.try_lock());
    l.unlock();
  }
  EXPECT_EQ(hold_rows(dc, brief), 0);
  // A hold not recorded yet: fence_check knows its fence at once; other processes do not list
  // it, force_release() finds it all the same.
  auto n = unique_name("rec-hold");
  auto l = a.make_lock(n);
  ASSERT_TRUE(l.try_lock());
  EXPECT_EQ(hold_rows(dc, n), 0);
  EXPECT_TRUE(b.list(n).empty());
  {
    pqxx::work tx(dc);
    EXPECT_TRUE(sqlock::postgres::fence_check(tx, n, l.fence()));
    EXPECT_FALSE(sqlock::postgres::fence_check(tx, n, l.fence() - 1));
    EXPECT_FALSE(sqlock::postgres::fence_check(tx, n, l.fence() + 1));
  }
  // The holding process's list() records its holds first: then everyone sees it.
  expect_listed_once_recorded(a, b, l);
  // A recorded hold released: its row no longer names the session, so the session's next hold
  // of the name is not shown with the old owner and fence.
  const auto old_fence = l.fence();
  l.unlock();
  EXPECT_TRUE(b.list(n).empty());
  auto again = a.make_lock(n);
  ASSERT_TRUE(again.try_lock());
  EXPECT_TRUE(b.list(n).empty());
  {
    pqxx::work tx(dc);
    EXPECT_FALSE(sqlock::postgres::fence_check(tx, n, old_fence));
    EXPECT_TRUE(sqlock::postgres::fence_check(tx, n, again.fence()));
  }
  expect_force_release_ends_it(b, again);  // the unrecorded hold's session, found in pg_locks
  // record_after=0: recorded in the background without anyone asking.
  auto c = sqlock::connect(pg::with(app_, "mode=advisory&record_after=0s"));
  auto z = unique_name("rec-now");
  auto lz = c.make_lock(z);
  ASSERT_TRUE(lz.try_lock());
  EXPECT_EQ(await_count(dc,
                        "SELECT count(*) FROM sqlock.advisory_holds WHERE name = " + dc.quote(z) +
                            " AND fence = " + std::to_string(lz.fence()),
                        1),
            1);
  lz.unlock();
}

TEST_F(postgres, advisory_keys_from_the_client_are_the_servers_and_exclude_version_8_holds) {
  // Since schema version 9 the library computes sqlock.lock_key(name) itself; the server's
  // routines of version 8 (advisory_lock / advisory_unlock, which hash in SQL) and raw
  // pg_try_advisory_lock(lock_key(name)) must meet the library's holds on the same key, for
  // names of every shape.
  auto a = sqlock::connect(pg::with(app_, "mode=advisory"));
  auto dc = dba();
  const std::string tag = unique_name("key");
  for (const std::string& n :
       {tag + "-plain", tag + " with spaces, 'quotes' and \"double\"", tag + "-ключ-🔒-鍵",
        tag + std::string(900, 'x'), tag + "\t\n\\%_", tag + "-é" /* precomposed */}) {
    SCOPED_TRACE(n);
    auto l = a.make_lock(n);
    ASSERT_TRUE(l.try_lock());
    {
      pqxx::nontransaction tx(dc);
      EXPECT_FALSE(
          tx.exec_params1("SELECT pg_try_advisory_lock(sqlock.lock_key($1))", n)[0].as<bool>());
      EXPECT_TRUE(tx.exec_params1("SELECT sqlock.advisory_lock($1, 'v8-owner', 'v8') IS NULL", n)[0]
                      .as<bool>());
    }
    l.unlock();
    std::uint64_t v8_fence = 0;
    {
      pqxx::nontransaction tx(dc);
      v8_fence = tx.exec_params1("SELECT sqlock.advisory_lock($1, 'v8-owner', 'v8')", n)[0]
                     .as<std::uint64_t>();
    }
    EXPECT_FALSE(l.try_lock());  // the version-8 routine's hold, on the same key
    {
      pqxx::nontransaction tx(dc);
      EXPECT_TRUE(tx.exec_params1("SELECT sqlock.advisory_unlock($1, 'v8-owner', $2, false)", n,
                                  v8_fence)[0]
                      .as<bool>());
    }
    ASSERT_TRUE(l.try_lock());
    EXPECT_GT(l.fence(), v8_fence);
    l.unlock();
  }
}

TEST_F(postgres, advisory_waiters_wait_inside_the_server_and_get_the_lock_at_release) {
  auto name = unique_name("server-wait");
  auto a = sqlock::connect(pg::with(app_, "mode=advisory"), patient_tries());
  // As the DBA's role: pg_stat_activity shows the wait events of other roles' sessions only to
  // privileged roles.
  auto b = sqlock::connect(pg::with(owner_, "mode=advisory&waiters=1&application_name=" + name),
                           patient_tries());
  auto dc = dba();
  // b's waiter session sits in the server's lock queue.
  const std::string queued = "SELECT count(*) FROM pg_stat_activity WHERE application_name = '" +
                             name + "' AND wait_event_type = 'Lock' AND wait_event = 'advisory'";
  auto [first, fence] = hand_over(a, b, name, dc, queued);
  EXPECT_GT(fence, first);
  auto la = a.make_lock(name);
  // A waiter whose deadline passes in the server returns busy, and its session stays usable.
  ASSERT_TRUE(la.try_lock());
  auto lb = b.make_lock(name);
  EXPECT_FALSE(lb.try_lock_for(300ms));
  la.unlock();
  EXPECT_TRUE(lb.try_lock_for(5s));
  lb.unlock();
}

TEST_F(postgres, advisory_waiters_beyond_the_server_waiters_register_and_are_notified) {
  auto name = unique_name("notify-wait");
  auto a = sqlock::connect(pg::with(app_, "mode=advisory"));
  auto b = sqlock::connect(pg::with(app_, "mode=advisory&waiters=0"));
  auto dc = dba();
  auto [first, fence] = hand_over(a, b, name, dc,
                                  "SELECT count(*) FROM sqlock.advisory_waits WHERE name = '" +
                                      name + "' AND until > clock_timestamp()");
  EXPECT_GT(fence, first);
}

TEST_F(postgres, advisory_holds_and_waiters_of_one_process_use_at_most_8_connections) {
  auto tag = unique_name("conns");
  auto c =
      sqlock::connect(pg::with(owner_, "mode=advisory&application_name=" + tag), patient_tries());
  std::vector<mutex> held;
  for (int i = 0; i < 1000; ++i) {
    held.push_back(c.make_lock(tag + ":" + std::to_string(i)));
    ASSERT_TRUE(held.back().try_lock()) << i;
  }
  // Six threads of the same process wait for locks it holds elsewhere.
  auto other = sqlock::connect(pg::with(app_, "mode=advisory"), patient_tries());
  std::vector<mutex> busy;
  for (int i = 0; i < 6; ++i) {
    busy.push_back(other.make_lock(tag + ":busy" + std::to_string(i)));
    ASSERT_TRUE(busy.back().try_lock());
  }
  std::vector<std::thread> waiting;
  for (int i = 0; i < 6; ++i)
    waiting.emplace_back([&, i] {
      auto l = c.make_lock(tag + ":busy" + std::to_string(i));
      if (l.try_lock_for(20s)) l.unlock();
    });
  auto dc = dba();
  auto count = "SELECT count(*) FROM pg_stat_activity WHERE application_name = '" + tag + "'";
  // Two of them wait inside the server; the rest registered for NOTIFY.
  await_count(dc,
              "SELECT count(*) FROM sqlock.advisory_waits WHERE starts_with(name, '" + tag +
                  ":busy') AND until > clock_timestamp()",
              4);
  {
    pqxx::nontransaction tx(dc);
    auto n = tx.exec1(count)[0].as<int>();
    EXPECT_GE(n, 3);  // the lock sessions are seen (the count is not vacuous)
    EXPECT_LE(n, 8);
  }
  for (auto& l : busy) l.unlock();
  for (auto& t : waiting) t.join();
  for (auto& l : held) l.unlock();
}

// A stop at any moment of a wait ends it long before its deadline: in the server (whose
// cancel can reach the server before the statement does, and is then dropped), in the first
// try, or between the two. 100 stops, spread over the first 5 ms of the wait.
TEST_F(postgres, advisory_a_stop_at_any_moment_of_a_wait_ends_it) {
  auto name = unique_name("stop-any");
  auto a = sqlock::connect(pg::with(app_, "mode=advisory"));
  auto b = sqlock::connect(pg::with(app_, "mode=advisory&waiters=1"));
  auto la = a.make_lock(name);
  ASSERT_TRUE(la.try_lock());
  auto lb = b.make_lock(name);
  EXPECT_EQ(waits_a_stop_missed(lb), 0) << "stopped waits that ran (nearly) to their deadline";
  la.unlock();
  auto c = sqlock::connect(pg::with(app_, "mode=advisory"));
  auto lc = c.make_lock(name);
  EXPECT_TRUE(lc.try_lock()) << "a stopped waiter still stands in the queue";
}

}  // namespace
}  // namespace sqlock::test
