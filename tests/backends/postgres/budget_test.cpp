// The connection budget of one PostgreSQL client (URL max_connections=): many threads of one
// client never have more connections open than the budget and open none after warm-up (the
// server's pg_stat_activity, sampled while they run); a try_lock_for() that finds every pooled
// connection busy returns false by its deadline; a server that refuses connections for want of
// a slot (SQLSTATE 53300, here a role's CONNECTION LIMIT) is waited out within the wait.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "budget_load.hpp"
#include "pg_env.hpp"
#include "sqlock/random.hpp"

namespace sqlock::test {
namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

// A schema name of the test's own (lower case, a valid identifier).
std::string own_schema() {
  return "sqlock_budget_" + random_token().substr(0, 10);
}

// `threads` threads of one client with `params`, its sessions counted in pg_stat_activity (by
// application_name); the newest session's start marks a connection opened.
void stays_within_budget(const std::string& owner, int threads, const std::string& params,
                         int budget) {
  auto tag = unique_name("budget");
  auto c = sqlock::connect(pg::with(owner, params + "application_name=" + tag));
  pqxx::connection dc(owner);
  const std::string sessions =
      "SELECT count(*), coalesce(max(backend_start), '-infinity') FROM pg_stat_activity "
      "WHERE application_name = '" +
      tag + "'";
  expect_within_budget(c, threads, tag, budget, [&] {
    pqxx::nontransaction tx(dc);
    auto r = tx.exec1(sessions);
    return budget_sample{r[0].as<int>(), r[1].as<std::string>()};
  });
}

// A client of `schema` (migrated here) with a budget of `budget` statement connections and no
// listener, its sessions named `tag` (application_name).
client statements_only(const std::string& owner, const std::string& schema, int budget,
                       const std::string& tag) {
  sqlock::connect(pg::with(owner, "schema=" + schema + "&migrate=auto"));
  return sqlock::connect(pg::with(owner, "schema=" + schema +
                                             "&max_connections=" + std::to_string(budget) +
                                             "&listen=off&application_name=" + tag));
}

// The server sessions of the client named `tag` (application_name), with a further condition.
int sessions_of(pqxx::connection& watch, const std::string& tag, const std::string& where = "") {
  pqxx::nontransaction w(watch);
  return w
      .exec1("SELECT count(*) FROM pg_stat_activity WHERE application_name = '" + tag + "'" +
             where)[0]
      .as<int>();
}

TEST_F(postgres, sixteen_threads_of_one_client_stay_within_the_default_budget) {
  stays_within_budget(owner_, 16, "", 8);
}

TEST_F(postgres, fifty_threads_of_one_client_stay_within_the_default_budget) {
  stays_within_budget(owner_, 50, "", 8);
}

TEST_F(postgres, a_budget_of_sixteen_bounds_sixteen_threads_in_advisory_mode_too) {
  stays_within_budget(owner_, 16, "mode=advisory&max_connections=16&", 16);
}

TEST_F(postgres, sixteen_threads_stay_within_the_default_budget_in_a_peers_advisory_layout) {
  stays_within_budget(owner_, 16, "compat=distributedlock&allow_hashing=true&", 8);
}

TEST_F(postgres, a_try_lock_for_that_finds_every_pooled_connection_busy_returns_false_in_time) {
  const auto schema = own_schema();
  schema_guard guard(owner_, schema);
  auto tag = unique_name("busy-pool");
  auto c = statements_only(owner_, schema, 2, tag);
  pqxx::connection dc(owner_);
  // The lock table locked: both pooled connections wait in the server inside an acquire.
  pqxx::work tx(dc);
  tx.exec("LOCK TABLE " + schema + ".locks IN ACCESS EXCLUSIVE MODE");
  pqxx::connection watch(owner_);
  auto count = [&](const std::string& where) { return sessions_of(watch, tag, where); };
  expect_busy_budget_times_out(
      c, tag, [&] { return count(" AND wait_event_type = 'Lock'") == 2; },
      [&] { EXPECT_EQ(count(""), 2); }, [&] { tx.commit(); });
}

TEST_F(postgres, a_connection_closed_at_its_deadline_counts_until_the_server_ends_its_session) {
  const auto schema = own_schema();
  schema_guard guard(owner_, schema);
  auto tag = unique_name("closing");
  auto c = statements_only(owner_, schema, 1, tag);
  pqxx::connection watch(owner_);
  auto sessions = [&] { return sessions_of(watch, tag); };
  // The lock table locked: an acquire's statement waits in the server past the call's deadline,
  // so the client closes its connection while the server session lives on, blocked.
  pqxx::connection dc(owner_);
  pqxx::work tx(dc);
  tx.exec("LOCK TABLE " + schema + ".locks IN ACCESS EXCLUSIVE MODE");
  auto a = c.make_lock(tag + ":a");
  try {
    EXPECT_FALSE(a.try_lock_for(300ms));
  } catch (const connection_error&) {  // the statement's "no answer in time": either is fine here
  }
  // A second call must not open a replacement while that session lives: busy by its deadline.
  // The server ends the blocked session within 100 ms of the close (the sessions' 100 ms
  // client_connection_check_interval), so the call may also open a replacement whose statement
  // blocks on the same table and gets no answer in time; never two sessions at once.
  auto b = c.make_lock(tag + ":b");
  bool got = true;
  try {
    got = b.try_lock_for(300ms);
  } catch (const connection_error&) {
    got = false;
  }
  EXPECT_FALSE(got);
  EXPECT_LE(sessions(), 1) << "the server saw more sessions of the client than its budget of 1";
  // Once the blocked statement ends, its session ends, and the next call connects.
  tx.commit();
  EXPECT_TRUE(b.try_lock_for(5s));
  EXPECT_LE(sessions(), 1);
  b.unlock();
}

// A process forked once the library has closed a connection (so its closing-session thread runs
// in the parent) uses the library in the child: a connection the server ended is replaced within
// the budget of 1. Without a waiter thread of the child's own, the replacement waited for a
// closed session nobody watched, until the call's deadline.
TEST_F(postgres, a_forked_child_replaces_a_connection_within_its_budget) {
  const auto schema = own_schema();
  schema_guard guard(owner_, schema);
  const auto tag = unique_name("forked");
  {  // the parent closes a connection: the process's closing-session thread starts
    auto c = statements_only(owner_, schema, 1, tag);
    auto m = c.make_lock(tag + ":parent");
    ASSERT_TRUE(m.try_lock_for(5s));
    m.unlock();
  }
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int rc = 1;
    try {
      const auto child_tag = tag + "c";
      auto c = statements_only(owner_, schema, 1, child_tag);
      auto m = c.make_lock(child_tag + ":child");
      if (m.try_lock_for(5s)) {
        m.unlock();
        pqxx::connection k(owner_);
        pqxx::nontransaction(k).exec(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '" +
            child_tag + "'");
        rc = m.try_lock_for(5s) ? 0 : 3;  // the engine replaces the connection the server ended
        if (rc == 0) m.unlock();
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
      rc = 2;
    }
    ::_exit(rc);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: no first lock, 2: an error, 3: no lock after the "
                                       "server ended the child's connection";
}

// A role of the test's own with a connection limit: the server refuses its third connection
// with SQLSTATE 53300, as it would at max_connections.
class limited_role {
 public:
  limited_role(const std::string& owner, const std::string& schema, int limit)
      : owner_(owner), name_("sqlock_budget_r" + random_token().substr(0, 10)) {
    pqxx::connection c(owner_);
    pqxx::nontransaction tx(c);
    tx.exec("CREATE ROLE " + name_ + " LOGIN PASSWORD 'budget-pw' CONNECTION LIMIT " +
            std::to_string(limit));
    tx.exec("GRANT " + schema + "_execute TO " + name_);
    auto at = owner.find('@'), scheme = owner.find("://");
    url_ = owner.substr(0, scheme + 3) + name_ + ":budget-pw" + owner.substr(at);
  }
  ~limited_role() {
    try {
      pqxx::connection c(owner_);
      pqxx::nontransaction tx(c);
      tx.exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '" + name_ +
              "'");
      tx.exec("DROP ROLE IF EXISTS " + name_);
    } catch (...) {
    }
  }
  limited_role(const limited_role&) = delete;
  limited_role& operator=(const limited_role&) = delete;
  const std::string& url() const { return url_; }

 private:
  std::string owner_, name_, url_;
};

TEST_F(postgres, clients_beyond_a_connection_limit_wait_for_a_slot_and_all_get_the_lock) {
  const auto schema = own_schema();
  schema_guard guard(owner_, schema);
  sqlock::connect(pg::with(owner_, "schema=" + schema + "&migrate=auto"));
  limited_role role(owner_, schema, 2);
  const auto url = pg::with(role.url(), "schema=" + schema);
  const auto name = unique_name("full");
  {
    // Two clients take both slots; a third is refused until its deadline, and says why.
    auto a = sqlock::connect(url);
    auto b = sqlock::connect(url);
    try {
      sqlock::connect(url, {}, clock::now() + 500ms);
      ADD_FAILURE() << "a third connection was allowed";
    } catch (const connection_error& e) {
      EXPECT_NE(std::string(e.what()).find("too many clients"), std::string::npos) << e.what();
    }
  }
  // More clients than the role may connect, each waiting for the same name.
  std::atomic<int> inside{0}, twice{0}, got{0};
  std::vector<std::string> errors(5);
  std::vector<std::thread> ts;
  for (std::size_t i = 0; i < errors.size(); ++i)
    ts.emplace_back([&, i] {
      try {
        auto c = sqlock::connect(url);
        auto l = c.make_lock(name);
        if (!l.try_lock_for(30s)) {
          errors[i] = "no lock within the wait";
          return;
        }
        if (++inside > 1) ++twice;
        std::this_thread::sleep_for(50ms);
        --inside;
        ++got;
        l.unlock();
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  for (auto& t : ts) t.join();
  for (const auto& e : errors) EXPECT_EQ(e, "");
  EXPECT_EQ(got.load(), 5);
  EXPECT_EQ(twice.load(), 0);
}

}  // namespace
}  // namespace sqlock::test
