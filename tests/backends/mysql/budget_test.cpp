// The connection budget of one MySQL/MariaDB client (URL max_connections=): many threads of one
// client never have more sessions open than the budget and open none after warm-up (the
// server's processlist, sampled while they run, for a user of the test's own); a try_lock_for()
// that finds every pooled connection busy returns false by its deadline; a server that refuses
// sessions for want of a slot (here the user's MAX_USER_CONNECTIONS) is waited out within each
// `sqlock run --wait` of more processes than it allows, and reported clearly when it is not.
// Users and databases are made by the sqlock_dba account and dropped at the end.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "budget_load.hpp"
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

// `threads` threads of one client with `params`, its sessions counted in the processlist.
void stays_within_budget(const std::string& params, int threads, int budget) {
  std::string dba_url, admin_url;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_DBA_URL", dba_url);
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_ADMIN_URL", admin_url);
  private_store store(dba_url, "");
  auto watcher = raw_backend(with_param(admin_url, "pool", "1"));
  auto c = sqlock::connect(store.url + "?" + params);
  expect_within_budget(c, threads, unique_name("budget"), budget,
                       [&] { return sessions_of(*watcher, store.database); });
}

TEST(mysql_budget, sixteen_threads_of_one_client_stay_within_the_default_budget) {
  stays_within_budget("", 16, 8);
}

TEST(mysql_budget, fifty_threads_of_one_client_stay_within_the_default_budget) {
  stays_within_budget("", 50, 8);
}

TEST(mysql_budget, sixteen_threads_in_advisory_mode_stay_within_the_default_budget) {
  stays_within_budget("mode=advisory", 16, 8);
}

TEST(mysql_budget, a_try_lock_for_that_finds_every_pooled_connection_busy_returns_false_in_time) {
  std::string dba_url, admin_url;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_DBA_URL", dba_url);
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_ADMIN_URL", admin_url);
  private_store store(dba_url, "");
  auto watcher = raw_backend(with_param(admin_url, "pool", "1"));
  // Two statement connections; each exchange may wait up to 10 s for the table.
  auto c = sqlock::connect(store.url + "?max_connections=2&timeout=10s");
  auto dba = raw_backend(with_param(store.db.dba(), "pool", "1"));
  dba->with_connection([&](sql::connection& conn) {
    const auto dba_id = single(conn.query("SELECT CONNECTION_ID()", clock::now() + 5s));
    // The lock table locked: both pooled connections wait in the server inside an acquire.
    conn.query("LOCK TABLES sqlock_locks WRITE", clock::now() + 5s);
    const std::string waiting = "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = '" +
                                store.database + "' AND STATE LIKE '%metadata lock%'";
    expect_busy_budget_times_out(
        c, unique_name("busy-pool"), [&] { return single(query(*watcher, waiting)) == "2"; },
        [&] { EXPECT_EQ(sessions_of(*watcher, store.database, dba_id).first, 2); },
        [&] { conn.query("UNLOCK TABLES", clock::now() + 5s); });
  });
}

TEST(mysql_budget, a_connection_closed_at_its_deadline_counts_until_the_server_ends_its_session) {
  std::string dba_url, admin_url;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_DBA_URL", dba_url);
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_ADMIN_URL", admin_url);
  private_store store(dba_url, "");
  auto watcher = raw_backend(with_param(admin_url, "pool", "1"));
  // One statement connection, whose blocked statement may wait up to 3 s for the table.
  auto c = sqlock::connect(store.url + "?max_connections=1&timeout=3s");
  const auto tag = unique_name("closing");
  auto dba = raw_backend(with_param(store.db.dba(), "pool", "1"));
  dba->with_connection([&](sql::connection& conn) {
    const auto dba_id = single(conn.query("SELECT CONNECTION_ID()", clock::now() + 5s));
    auto sessions = [&] { return sessions_of(*watcher, store.database, dba_id).first; };
    // The lock table locked: an acquire's statement waits in the server past the call's
    // deadline, so the client closes its connection while the server session lives on, blocked.
    conn.query("LOCK TABLES sqlock_locks WRITE", clock::now() + 5s);
    auto a = c.make_lock(tag + ":a");
    try {
      EXPECT_FALSE(a.try_lock_for(300ms));
    } catch (const connection_error&) {  // "no answer by its deadline": either is fine here
    }
    // A second call must not open a replacement while that session lives: busy by its deadline.
    auto b = c.make_lock(tag + ":b");
    bool got = true;
    EXPECT_NO_THROW(got = b.try_lock_for(300ms));
    EXPECT_FALSE(got);
    EXPECT_LE(sessions(), 1) << "the server saw more sessions of the client than its budget of 1";
    // Once the blocked statement ends, its session ends, and the next call connects.
    conn.query("UNLOCK TABLES", clock::now() + 5s);
    EXPECT_TRUE(b.try_lock_for(5s));
    EXPECT_LE(sessions(), 1);
    b.unlock();
  });
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
