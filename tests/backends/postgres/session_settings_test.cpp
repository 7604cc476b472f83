// A DBA's role defaults do not end the library's holds or waits: a login role of the test's own
// gets small idle_session_timeout, idle_in_transaction_session_timeout, statement_timeout and
// lock_timeout (ALTER ROLE ... SET), and sqlock's sessions as that role still hold through
// several multiples of them, wait in the server past them, and still report a killed session's
// hold lost at once. The shared roles are never changed.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <thread>

#include "pg_env.hpp"
#include "sql/sql_engine.hpp"
#include "sqlock/backend.hpp"

namespace sqlock::test {
namespace {

using namespace std::chrono_literals;

TEST_F(postgres, role_timeouts_do_not_end_holds_or_waits_and_a_killed_session_is_still_lost) {
  role_guard role(owner_, "sqlock_t_" + random_token().substr(0, 10));
  role.set("idle_session_timeout", "1500ms");
  role.set("idle_in_transaction_session_timeout", "1500ms");
  role.set("statement_timeout", "300ms");
  role.set("lock_timeout", "300ms");
  const std::string url = as_user(app_, role.name(), role.name());
  {
    // The defaults reach a plain session of the role (what the library's sessions override).
    pqxx::connection c(url);
    pqxx::nontransaction tx(c);
    EXPECT_EQ(tx.exec1("SHOW statement_timeout")[0].as<std::string>(), "300ms");
    EXPECT_EQ(tx.exec1("SHOW idle_session_timeout")[0].as<std::string>(), "1500ms");
  }

  auto adv = sqlock::connect(pg::with(url, "mode=advisory"));
  auto row = sqlock::connect(pg::with(url, "mode=pessimistic"));
  auto other_adv = sqlock::connect(pg::with(owner_, "mode=advisory"));
  auto other_row = sqlock::connect(pg::with(owner_, "mode=pessimistic"));

  // Holders as the role. A 6 s lease renews every 2 s: the pooled connections sit idle longer
  // than idle_session_timeout between renewals, the advisory session all the time.
  const auto na = unique_name("dba-adv"), nr = unique_name("dba-row");
  auto ha = adv.make_lock(na, {.lease = 6s});
  auto hr = row.make_lock(nr, {.lease = 6s});
  ASSERT_TRUE(ha.try_lock_for(10s));
  ASSERT_TRUE(hr.try_lock_for(10s));

  // Waiters as the role, on names held by the owner: they wait 2 s, longer than the role's
  // statement_timeout and lock_timeout (the advisory one inside pg_advisory_lock).
  const auto wa = unique_name("dba-adv-wait"), wr = unique_name("dba-row-wait");
  auto blocker_a = other_adv.make_lock(wa);
  auto blocker_r = other_row.make_lock(wr);
  ASSERT_TRUE(blocker_a.try_lock_for(10s));
  ASSERT_TRUE(blocker_r.try_lock_for(10s));
  auto wait_on = [](sqlock::client& c, const std::string& name) {
    return std::async(std::launch::async, [&c, name] {
      auto l = c.make_lock(name);
      const auto start = std::chrono::steady_clock::now();
      bool got = l.try_lock_for(20s);
      auto waited = std::chrono::steady_clock::now() - start;
      if (got) l.unlock();
      return std::make_pair(got, waited);
    });
  };
  auto waiter_a = wait_on(adv, wa);
  auto waiter_r = wait_on(row, wr);
  std::this_thread::sleep_for(2s);
  blocker_a.unlock();
  blocker_r.unlock();
  auto [got_a, waited_a] = waiter_a.get();
  auto [got_r, waited_r] = waiter_r.get();
  EXPECT_TRUE(got_a) << "advisory waiter";
  EXPECT_TRUE(got_r) << "row-mode waiter";
  EXPECT_GE(waited_a, 1500ms);
  EXPECT_GE(waited_r, 1500ms);

  // Held through more than three times idle_session_timeout (the waits above included).
  std::this_thread::sleep_for(3s);
  EXPECT_FALSE(ha.lost());
  EXPECT_FALSE(hr.lost());
  EXPECT_TRUE(ha.renew());
  EXPECT_TRUE(hr.renew());
  EXPECT_FALSE(other_adv.make_lock(na).try_lock());
  EXPECT_FALSE(other_row.make_lock(nr).try_lock());
  EXPECT_EQ(adv.stats().losses + row.stats().losses, 0u);

  // A session killed anyway: the hold is reported lost at once.
  std::atomic<bool> lost{false};
  ha.on_lost([&](const std::string&) { lost = true; });
  adv.list(na);  // the holding process's list() records its advisory holds first
  {
    auto c = dba();
    pqxx::nontransaction tx(c);
    auto r = tx.exec_params("SELECT backend_pid FROM sqlock.advisory_holds WHERE name = $1", na);
    ASSERT_EQ(r.size(), 1u);
    tx.exec_params("SELECT pg_terminate_backend($1, 5000)", r[0][0].as<int>());
  }
  EXPECT_TRUE(eventually([&] { return lost.load(); }, 2s));
  EXPECT_TRUE(ha.lost());
  EXPECT_TRUE(other_adv.make_lock(na).try_lock_for(10s));
  ha.unlock();
  hr.unlock();
}

// The values a library session has: the role's defaults off, a value the connection string
// sets itself (libpq `options`) kept.
TEST_F(postgres, library_sessions_turn_role_timeouts_off_and_keep_the_connection_strings_own) {
  role_guard role(owner_, "sqlock_t_" + random_token().substr(0, 10));
  role.set("statement_timeout", "300ms");
  role.set("lock_timeout", "300ms");
  role.set("idle_session_timeout", "1500ms");
  const std::string url = as_user(app_, role.name(), role.name());
  auto show = [](sqlock::client& c, const std::string& setting) {
    auto* eng = dynamic_cast<sql::engine_backend*>(&c.get_backend());
    if (!eng) throw error("not an engine backend");
    sql::rows r;
    eng->with_connection([&](sql::connection& conn) { r = conn.query("SHOW " + setting); });
    return r.at(0).at(0).value_or("NULL");
  };
  auto plain = sqlock::connect(pg::with(url, "mode=pessimistic"));
  EXPECT_EQ(show(plain, "statement_timeout"), "0");
  EXPECT_EQ(show(plain, "lock_timeout"), "0");
  EXPECT_EQ(show(plain, "idle_session_timeout"), "0");
  EXPECT_EQ(show(plain, "idle_in_transaction_session_timeout"), "0");
  // A statement waiting in the server ends within 100 ms once its client is gone.
  EXPECT_EQ(show(plain, "client_connection_check_interval"), "100ms");
  auto own = sqlock::connect(pg::with(url, "mode=pessimistic&options=-c%20statement_timeout%3D7s"));
  EXPECT_EQ(show(own, "statement_timeout"), "7s");
  EXPECT_EQ(show(own, "lock_timeout"), "0");
  // The long form with dashes, beside another setting.
  auto other = sqlock::connect(pg::with(
      url, "mode=pessimistic&options=-c%20search_path%3Dpublic%20--idle-session-timeout%3D9s"));
  EXPECT_EQ(show(other, "idle_session_timeout"), "9s");
  EXPECT_EQ(show(other, "lock_timeout"), "0");
  EXPECT_EQ(show(other, "statement_timeout"), "0");
}

}  // namespace
}  // namespace sqlock::test
