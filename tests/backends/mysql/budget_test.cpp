// The connection budget of one MySQL/MariaDB client (URL max_connections=): many threads of one
// client never have more sessions open than the budget and open none after warm-up (the
// server's processlist, sampled while they run, for a user of the test's own); a try_lock_for()
// that finds every pooled connection busy returns false by its deadline; a server that refuses
// sessions for want of a slot (here the user's MAX_USER_CONNECTIONS) is waited out within each
// `sqlock run --wait` of more processes than it allows, and reported clearly when it is not.
// Users and databases are made by the sqlock_dba account and dropped at the end.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "mysql_env.hpp"
#include "own_database.hpp"
#include "sqlock/client.hpp"
#include "test_env.hpp"

namespace sqlock::test {
namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

// A database of the test's own with its schema, and its user (EXECUTE only) made with `limits`.
struct private_store {
  private_store(const std::string& dba_url, const std::string& limits) : db(dba_url) {
    sqlock::connect(db.dba() + "?migrate=auto");
    url = db.make_user(limits);
    database = mysql::parse_url(url).database;
  }
  own_database db;
  std::string url, database;
};

// The sessions on `database` (but `other`) now and the newest one's id (ids only grow: a session
// opened later has a larger one), read by an account that sees every user's sessions (PROCESS).
// By database, not by user: while a session runs a routine, the processlist shows the routine's
// definer as its user.
std::pair<int, std::string> sessions_of(sql::engine_backend& watcher, const std::string& database,
                                        const std::string& other = "0") {
  auto r = query(watcher,
                 "SELECT COUNT(*), COALESCE(MAX(ID), 0) FROM information_schema.PROCESSLIST "
                 "WHERE DB = '" +
                     database + "' AND ID <> " + other);
  return {std::stoi(r.at(0).at(0).value_or("0")), r.at(0).at(1).value_or("0")};
}

// `threads` threads of one client lock names of their own (per-entity names) for a while; a
// sampler counts the user's sessions and looks for one opened after the warm-up.
void stays_within_budget(const std::string& params, int threads, int budget) {
  std::string dba_url, admin_url;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_DBA_URL", dba_url);
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_ADMIN_URL", admin_url);
  private_store store(dba_url, "");
  auto watcher = raw_backend(with_param(admin_url, "pool", "1"));
  std::mutex rm;
  std::string first_retry;
  client_options co;
  co.waiting.on_retry = [&](std::string_view, std::string_view why) {
    std::lock_guard g(rm);
    if (first_retry.empty()) first_retry = why;
  };
  auto c = sqlock::connect(store.url + "?" + params, co);
  const auto tag = unique_name("budget");
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> pairs{0}, timeouts{0};
  std::atomic<int> errors{0};
  std::string first_error;
  std::mutex m;
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; !stop; ++i) {
        auto l = c.make_lock(tag + ":" + std::to_string(t) + ":" + std::to_string(i % 16));
        try {
          if (l.try_lock_for(2s)) {
            l.unlock();
            ++pairs;
          } else {
            ++timeouts;
          }
        } catch (const std::exception& e) {
          std::lock_guard g(m);
          if (errors++ == 0) first_error = e.what();
        }
      }
    });
  int most = 0;
  auto sample = [&] {
    auto [n, newest] = sessions_of(*watcher, store.database);
    most = std::max(most, n);
    return newest;
  };
  for (auto until = clock::now() + 1s; clock::now() < until;) {  // warm-up
    sample();
    std::this_thread::sleep_for(20ms);
  }
  const auto warm = sample();  // the newest session of the warm-up
  const auto pairs_warm = pairs.load();
  std::string newest = warm;
  for (auto until = clock::now() + 2s; clock::now() < until;) {
    newest = sample();
    std::this_thread::sleep_for(20ms);
  }
  stop = true;
  for (auto& t : ts) t.join();
  const auto counted = c.get_backend().connections();
  EXPECT_EQ(errors.load(), 0) << first_error;
  EXPECT_EQ(timeouts.load(), 0u);
  EXPECT_GT(pairs.load(), pairs_warm) << "no lock taken after the warm-up";
  EXPECT_LE(most, budget) << "sessions of one client at once";
  EXPECT_GE(most, 2) << "the threads never used connections side by side";
  EXPECT_EQ(newest, warm) << "a session was opened after the warm-up; " << first_retry;
  ASSERT_TRUE(counted.has_value());
  EXPECT_LE(counted->peak, static_cast<std::size_t>(budget));
}

TEST(mysql_budget, sixteen_threads_of_one_client_stay_within_the_default_budget) {
  stays_within_budget("", 16, 8);
}

TEST(mysql_budget, fifty_threads_of_one_client_stay_within_the_default_budget) {
  stays_within_budget("", 50, 8);
}

TEST(mysql_budget, fifty_threads_in_advisory_mode_stay_within_the_default_budget) {
  stays_within_budget("mode=advisory", 50, 8);
}

TEST(mysql_budget, a_try_lock_for_that_finds_every_pooled_connection_busy_returns_false_in_time) {
  std::string dba_url, admin_url;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_DBA_URL", dba_url);
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_ADMIN_URL", admin_url);
  private_store store(dba_url, "");
  auto watcher = raw_backend(with_param(admin_url, "pool", "1"));
  // Two statement connections; each exchange may wait up to 10 s for the table.
  auto c = sqlock::connect(store.url + "?max_connections=2&timeout=10s");
  const auto tag = unique_name("busy-pool");
  std::atomic<int> got{0};
  std::vector<std::thread> blocked;
  auto dba = raw_backend(with_param(store.db.dba(), "pool", "1"));
  dba->with_connection([&](sql::connection& conn) {
    const auto dba_id = single(conn.query("SELECT CONNECTION_ID()", clock::now() + 5s));
    // The lock table locked: both pooled connections wait in the server inside an acquire.
    conn.query("LOCK TABLES sqlock_locks WRITE", clock::now() + 5s);
    for (int i = 0; i < 2; ++i)
      blocked.emplace_back([&, i] {
        auto l = c.make_lock(tag + ":blocked" + std::to_string(i));
        if (l.try_lock_for(20s)) {
          ++got;
          l.unlock();
        }
      });
    const std::string waiting = "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = '" +
                                store.database + "' AND STATE LIKE '%metadata lock%'";
    bool both = false;
    for (auto until = clock::now() + 10s; !both && clock::now() < until;) {
      both = single(query(*watcher, waiting)) == "2";
      if (!both) std::this_thread::sleep_for(20ms);
    }
    EXPECT_TRUE(both) << "the two pooled connections never waited in the server";
    auto l = c.make_lock(tag + ":free");
    bool taken = true;
    const auto t0 = clock::now();
    EXPECT_NO_THROW(taken = l.try_lock_for(200ms));
    const auto took = clock::now() - t0;
    EXPECT_FALSE(taken);
    // The deadline, plus the 250 ms every attempt may take (wait_policy::min_attempt), plus a
    // margin for a loaded machine.
    EXPECT_LT(took, 200ms + 250ms + 250ms);
    EXPECT_EQ(sessions_of(*watcher, store.database, dba_id).first, 2);
    conn.query("UNLOCK TABLES", clock::now() + 5s);
  });
  for (auto& t : blocked) t.join();
  EXPECT_EQ(got.load(), 2) << "the waiting acquires did not complete after the table was free";
}

#ifdef SQLOCK_CLI_PATH
// The output of a shell command line.
std::string sh(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return "popen failed";
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  ::pclose(p);
  return out;
}

TEST(mysql_budget, more_processes_than_the_server_allows_all_get_the_lock_within_their_wait) {
  std::string dba_url;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_DBA_URL", dba_url);
  private_store store(dba_url, "WITH MAX_USER_CONNECTIONS 2");
  const std::string cli = SQLOCK_CLI_PATH;
  const auto name = unique_name("full");
  {
    // Two clients take both slots: a third is refused until its wait ends, and says why.
    auto a = sqlock::connect(store.url);
    auto b = sqlock::connect(store.url);
    auto out = sh(cli + " run --url '" + store.url + "' --wait 1s " + name +
                  " -- true 2>&1; echo \"exit $?\"");
    EXPECT_NE(out.find("too many clients"), std::string::npos) << out;
    EXPECT_NE(out.find("exit 69"), std::string::npos) << out;
  }
  // Six processes, each waiting up to 60 s for the same name; each holds it for 100 ms and
  // marks that it is inside with a directory only one process at a time can create.
  const auto dir = std::filesystem::temp_directory_path() / unique_name("sqlock-full");
  std::filesystem::create_directories(dir);
  const std::string inside = (dir / "inside").string();
  std::string script;
  for (int i = 0; i < 6; ++i)
    script += cli + " run --url '" + store.url + "' --wait 60s " + name + " -- sh -c 'mkdir " +
              inside + " || echo HELD-TWICE; sleep 0.1; rmdir " + inside + "; echo ran' 2>&1 & ";
  script += "wait";
  auto out = sh(script);
  std::filesystem::remove_all(dir);
  std::size_t ran = 0;
  for (auto at = out.find("ran\n"); at != std::string::npos; at = out.find("ran\n", at + 1)) ++ran;
  EXPECT_EQ(ran, 6u) << out;
  EXPECT_EQ(out.find("HELD-TWICE"), std::string::npos) << out;
  EXPECT_EQ(out.find("too many"), std::string::npos) << out;
}
#endif

}  // namespace
}  // namespace sqlock::test
