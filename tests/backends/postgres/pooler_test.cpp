// The PostgreSQL backend through pgbouncer (scripts/servers.d/15-pgbouncer.sh): the
// conformance suite's row modes through transaction pooling (the pool mode declared or told from
// the connection, LISTEN straight to the server or polling) and advisory mode through session
// pooling, exclusion through statement pooling, and advisory mode refused where the pooler hands
// the server session to other clients. Need SQLOCK_TEST_PGBOUNCER_*_URL and, for the schema and the
// LISTEN connection's direct address, SQLOCK_TEST_POSTGRES_URL (the same database).
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "conformance.hpp"
#include "pg_env.hpp"
#include "sqlock/client.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/postgres/postgres.hpp"
#include "sqlock/url.hpp"

namespace sqlock::test {

namespace {

constexpr const char* tx_var = "SQLOCK_TEST_PGBOUNCER_TX_URL";
constexpr const char* tx_app_var = "SQLOCK_TEST_PGBOUNCER_TX_APP_URL";
constexpr const char* stmt_var = "SQLOCK_TEST_PGBOUNCER_STMT_URL";
constexpr const char* session_var = "SQLOCK_TEST_PGBOUNCER_SESSION_URL";
constexpr const char* session_app_var = "SQLOCK_TEST_PGBOUNCER_SESSION_APP_URL";

// listen_host, listen_port and listen_dbname of the direct server URL: the LISTEN connection
// goes past the pooler.
std::string listen_direct() {
  auto direct = url::parse(env(pg::url_var));
  std::string out = "listen_host=" + direct.hosts.at(0).host;
  if (direct.hosts.at(0).port != 0) out += "&listen_port=" + std::to_string(direct.hosts[0].port);
  return out + "&listen_dbname=" + direct.path.substr(1);
}

// A store through the pooler at `var` with URL options `query`, on a migrated schema.
store_case through(const std::string& label, const char* var, std::function<std::string()> query) {
  return store_case{.label = label,
                    .url_var = var,
                    .url = [query](const std::string& base, const std::filesystem::path&) {
                      pg::ensure_migrated();
                      return pg::with(base, query());
                    }};
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(
    pgbouncer, conformance,
    ::testing::Values(
        // Transaction pooling, nothing declared: the driver meets the pooler (a named statement
        // missing on the server session) and goes on with unnamed statements; its listener finds
        // the proxy and waiters poll.
        through("tx_pessimistic_detected", tx_var, [] { return "mode=pessimistic"; }),
        // Transaction pooling declared, the EXECUTE-only role, LISTEN straight to the server.
        through("tx_optimistic_app_listen_direct", tx_app_var,
                [] { return "mode=optimistic&pooler=transaction&" + listen_direct(); }),
        // Session pooling declared: everything as on a direct connection, advisory mode included.
        through("session_advisory_app", session_app_var,
                [] { return "mode=advisory&pooler=session"; })),
    store_label);

namespace {

// The config_error message of taking a lock through `u`, or "" when it was not refused.
std::string refusal(const std::string& u) {
  try {
    auto c = sqlock::connect(u);
    auto m = c.make_lock(unique_name("refused"));
    if (m.try_lock()) m.unlock();
  } catch (const config_error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

// Statement pooling, declared: threads of two clients keep an exact counter under one lock
// (unnamed statements, waiters polling).
TEST(pgbouncer, statement_pooling_excludes) {
  std::string stmt;
  SQLOCK_REQUIRE_URL(stmt_var, stmt);
  pg::ensure_migrated();
  const auto u = pg::with(stmt, "mode=pessimistic&pooler=statement");
  auto a = sqlock::connect(u);
  auto b = sqlock::connect(u);
  const auto n = unique_name("stmt");
  int counter = 0;
  std::atomic<int> inside{0}, overlaps{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      auto m = (t % 2 ? a : b).make_lock(n);
      for (int i = 0; i < 10; ++i) {
        std::lock_guard g(m);
        if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
        int v = counter;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        counter = v + 1;
        inside.fetch_sub(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(counter, 40);
  EXPECT_EQ(overlaps.load(), 0);
}

// The library call with a key=value conninfo: the listener's host, port and database put in
// place of pgbouncer's; a waiter gets the lock when the holder releases it.
TEST(pgbouncer, key_value_conninfo_with_the_listener_straight_to_the_server) {
  std::string tx;
  SQLOCK_REQUIRE_URL(tx_var, tx);
  pg::ensure_migrated();
  auto via = url::parse(tx);
  auto direct = url::parse(env(pg::url_var));
  const std::string conninfo =
      "host=" + via.hosts.at(0).host + " port=" + std::to_string(via.hosts.at(0).port) +
      " dbname=" + via.path.substr(1) + " user=" + via.user.value() +
      " password=" + via.password.value() + " application_name=" + unique_name("kvlisten");
  sqlock::postgres::options o;
  o.pooler = "transaction";
  o.listen_host = direct.hosts.at(0).host;
  o.listen_port = std::to_string(direct.hosts.at(0).port);
  o.listen_dbname = direct.path.substr(1);
  // patient_tries: the holder's single try opens the client's first connection.
  client a(sqlock::postgres::open(conninfo, o), patient_tries());
  client b(sqlock::postgres::open(conninfo, o), patient_tries());
  EXPECT_TRUE(b.caps().notify);
  const auto n = unique_name("kv");
  std::atomic<bool> held{false};
  std::thread holder([&] {  // holds for 200 ms, then releases (on its own thread)
    auto la = a.make_lock(n);
    if (la.try_lock()) {
      held = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      la.unlock();
    }
  });
  for (int i = 0; i < 500 && !held; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  if (!held) {
    holder.join();
    FAIL() << "the holder did not get the lock";
  }
  auto lb = b.make_lock(n);
  EXPECT_TRUE(lb.try_lock_for(std::chrono::seconds(10)));
  holder.join();
  lb.unlock();
  // The waiter's listener is a session of the server itself, in the direct database.
  const std::string app = conninfo.substr(conninfo.rfind('=') + 1);
  EXPECT_TRUE(eventually(
      [&] {
        pqxx::connection dba(env(pg::url_var));
        pqxx::nontransaction q(dba);
        return q.exec1("SELECT count(*) FROM pg_stat_activity WHERE application_name = " +
                       q.quote(app) +
                       " AND query LIKE 'LISTEN %' AND datname = " + q.quote(o.listen_dbname))[0]
                   .as<int>() > 0;
      },
      std::chrono::seconds(5)))
      << "no LISTEN session of " << app << " on the server";
}

TEST(pgbouncer, advisory_mode_is_refused_in_transaction_and_statement_pooling) {
  std::string tx, stmt;
  SQLOCK_REQUIRE_URL(tx_var, tx);
  SQLOCK_REQUIRE_URL(stmt_var, stmt);
  pg::ensure_migrated();
  // Declared: refused when the client is opened, naming the pool mode and what to use.
  auto m = refusal(pg::with(tx, "mode=advisory&pooler=transaction"));
  EXPECT_TRUE(contains(m, "transaction pooling")) << m;
  EXPECT_TRUE(contains(m, "mode=pessimistic")) << m;
  EXPECT_TRUE(contains(m, "xact_lock")) << m;
  m = refusal(pg::with(stmt, "mode=advisory&pooler=statement"));
  EXPECT_TRUE(contains(m, "statement pooling")) << m;
  // Not declared: the proxy is told from the connection and the message says how to declare
  // session pooling.
  m = refusal(pg::with(tx, "mode=advisory"));
  EXPECT_TRUE(contains(m, "proxy or connection pooler")) << m;
  EXPECT_TRUE(contains(m, "pooler=session")) << m;
}

TEST(pgbouncer, advisory_mode_behind_undeclared_session_pooling_asks_for_the_declaration) {
  std::string session;
  SQLOCK_REQUIRE_URL(session_var, session);
  pg::ensure_migrated();
  auto m = refusal(pg::with(session, "mode=advisory"));
  EXPECT_TRUE(contains(m, "pooler=session")) << m;
  // Declared, it works: a hold excludes another client's. Patient tries: each client's first
  // try opens its session through the pooler, which under load took more than 250 ms.
  auto a = sqlock::connect(pg::with(session, "mode=advisory&pooler=session"), patient_tries());
  auto b = sqlock::connect(pg::with(session, "mode=advisory&pooler=session"), patient_tries());
  auto n = unique_name("sess");
  auto la = a.make_lock(n);
  auto lb = b.make_lock(n);
  ASSERT_TRUE(la.try_lock());
  EXPECT_FALSE(lb.try_lock());
  la.unlock();
  EXPECT_TRUE(lb.try_lock());
  lb.unlock();
}

TEST(pgbouncer, a_direct_connection_keeps_advisory_mode) {
  std::string direct;
  SQLOCK_REQUIRE_URL(pg::url_var, direct);
  pg::ensure_migrated();
  EXPECT_EQ(refusal(pg::with(direct, "mode=advisory")), "");
  // prepare=off on a direct connection: every call unnamed, locks as usual.
  auto c = sqlock::connect(pg::with(direct, "mode=pessimistic&prepare=off"));
  auto m = c.make_lock(unique_name("unnamed"));
  ASSERT_TRUE(m.try_lock());
  m.unlock();
}

TEST(pgbouncer, pooler_options_are_checked) {
  for (const char* bad : {"pooler=pgbouncer", "prepare=maybe", "listen_port=0", "listen_port=70000",
                          "listen_host=", "listen_dbname="}) {
    EXPECT_THROW(sqlock::connect(std::string("postgresql://u@127.0.0.1:1/db?") + bad), config_error)
        << bad;
  }
}

}  // namespace sqlock::test
