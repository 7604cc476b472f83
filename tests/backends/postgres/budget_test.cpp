// The connection budget of one PostgreSQL client (URL max_connections=): many threads of one
// client never have more connections open than the budget and open none after warm-up (the
// server's pg_stat_activity, sampled while they run); a try_lock_for() that finds every pooled
// connection busy returns false by its deadline; a server that refuses connections for want of
// a slot (SQLSTATE 53300, here a role's CONNECTION LIMIT) is waited out within the wait.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

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

// `threads` threads of one client lock names of their own (per-entity names) for a while; a
// sampler counts the client's sessions (by application_name) and looks for sessions started
// after the warm-up.
void stays_within_budget(const std::string& owner, int threads, const std::string& params,
                         int budget) {
  auto tag = unique_name("budget");
  auto c = sqlock::connect(pg::with(owner, params + "application_name=" + tag));
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
  pqxx::connection dc(owner);
  const std::string sessions =
      "SELECT count(*), coalesce(max(backend_start), '-infinity') FROM pg_stat_activity "
      "WHERE application_name = '" +
      tag + "'";
  int most = 0;
  auto sample = [&] {
    pqxx::nontransaction tx(dc);
    auto r = tx.exec1(sessions);
    most = std::max(most, r[0].as<int>());
    return r[1].as<std::string>();
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
  EXPECT_EQ(errors.load(), 0) << first_error;
  EXPECT_EQ(timeouts.load(), 0u);
  EXPECT_GT(pairs.load(), pairs_warm) << "no lock taken after the warm-up";
  EXPECT_LE(most, budget) << "sessions of one client at once";
  EXPECT_GE(most, 2) << "the threads never used connections side by side";
  EXPECT_EQ(newest, warm) << "a connection was opened after the warm-up";
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

TEST_F(postgres, a_try_lock_for_that_finds_every_pooled_connection_busy_returns_false_in_time) {
  const auto schema = own_schema();
  schema_guard guard(owner_, schema);
  sqlock::connect(pg::with(owner_, "schema=" + schema + "&migrate=auto"));
  auto tag = unique_name("busy-pool");
  // Two statement connections, no listener.
  auto c = sqlock::connect(pg::with(
      owner_, "schema=" + schema + "&max_connections=2&listen=off&application_name=" + tag));
  pqxx::connection dc(owner_);
  std::atomic<int> got{0};
  std::vector<std::thread> blocked;
  {
    // The lock table locked: both pooled connections wait in the server inside an acquire.
    pqxx::work tx(dc);
    tx.exec("LOCK TABLE " + schema + ".locks IN ACCESS EXCLUSIVE MODE");
    for (int i = 0; i < 2; ++i)
      blocked.emplace_back([&, i] {
        auto l = c.make_lock(tag + ":blocked" + std::to_string(i));
        if (l.try_lock_for(10s)) {
          ++got;
          l.unlock();
        }
      });
    pqxx::connection watch(owner_);
    const std::string waiting = "SELECT count(*) FROM pg_stat_activity WHERE application_name = '" +
                                tag + "' AND wait_event_type = 'Lock'";
    ASSERT_TRUE(eventually([&] {
      pqxx::nontransaction w(watch);
      return w.exec1(waiting)[0].as<int>() == 2;
    })) << "the two pooled connections never waited in the server";
    auto l = c.make_lock(tag + ":free");
    bool taken = true;
    const auto t0 = clock::now();
    EXPECT_NO_THROW(taken = l.try_lock_for(200ms));
    const auto took = clock::now() - t0;
    EXPECT_FALSE(taken);
    // The deadline, plus the 250 ms every attempt may take (wait_policy::min_attempt), plus a
    // margin for a loaded machine.
    EXPECT_LT(took, 200ms + 250ms + 250ms);
    pqxx::nontransaction w(watch);
    EXPECT_EQ(
        w.exec1("SELECT count(*) FROM pg_stat_activity WHERE application_name = '" + tag + "'")[0]
            .as<int>(),
        2);
    tx.commit();  // the table is free again
  }
  for (auto& t : blocked) t.join();
  EXPECT_EQ(got.load(), 2) << "the waiting acquires did not complete after the table was free";
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
