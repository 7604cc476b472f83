// What only the PostgreSQL backend has: session death in advisory mode, schema checks and
// upgrades, the EXECUTE-only role, names as the server sees them, sweeping, fencing inside the
// application's own transaction, transaction-scoped locks, NOTIFY wake-ups, URL handling.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "pg_env.hpp"
#include "sqlock/postgres/dialect.hpp"
#include "sqlock/postgres/postgres.hpp"
#include "sqlock/postgres/xact_lock.hpp"
#include "sqlock/sql_engine.hpp"

namespace sqlock::test {
namespace {

using namespace std::chrono_literals;

class postgres : public ::testing::Test {
 protected:
  void SetUp() override {
    SQLOCK_REQUIRE_URL(pg::url_var, owner_);
    SQLOCK_REQUIRE_URL(pg::app_url_var, app_);
    pg::ensure_migrated();
  }

  // A direct session as the schema owner, for what a DBA would look at.
  pqxx::connection dba() { return pqxx::connection(owner_); }

  std::string owner_, app_;
};

// Waits (liveness bound only) until `pred` holds.
template <class Pred>
bool eventually(Pred pred, std::chrono::seconds limit = 20s) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (pred()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return pred();
}

// ---- advisory mode: the hold dies with its session ----

TEST_F(postgres, terminated_advisory_session_frees_the_lock_and_the_holder_sees_the_loss) {
  auto a = sqlock::connect(pg::with(app_, "mode=advisory&sessions=1"));
  auto b = sqlock::connect(pg::with(app_, "mode=advisory"));
  ASSERT_TRUE(a.caps().session_bound);
  auto n1 = unique_name("adv-kill");
  auto n2 = unique_name("adv-kill-2");
  auto l1 = a.make_lock(n1, {.lease = 900ms});
  auto l2 = a.make_lock(n2, {.lease = 900ms});
  std::atomic<int> lost{0};
  l1.on_lost([&](const std::string&) { ++lost; });
  l2.on_lost([&](const std::string&) { ++lost; });
  ASSERT_TRUE(l1.try_lock());
  ASSERT_TRUE(l2.try_lock());  // multiplexed on the same (only) session

  int pid = 0;
  {
    auto c = dba();
    pqxx::work tx(c);
    auto r = tx.exec_params("SELECT backend_pid FROM sqlock.advisory_holds WHERE name = $1", n1);
    ASSERT_EQ(r.size(), 1u);
    pid = r[0][0].as<int>();
    auto r2 = tx.exec_params("SELECT backend_pid FROM sqlock.advisory_holds WHERE name = $1", n2);
    ASSERT_EQ(r2.size(), 1u);
    EXPECT_EQ(r2[0][0].as<int>(), pid);
    // The DBA's view of the same lock: pg_locks with the key computed on the server.
    auto held = tx.exec_params(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = $1 AND "
        "(classid::bigint << 32 | objid::bigint) = sqlock.lock_key($2)",
        pid, n1);
    EXPECT_EQ(held[0][0].as<int>(), 1);
    tx.exec_params("SELECT pg_terminate_backend($1, 5000)", pid);
    tx.commit();
  }
  auto lb = b.make_lock(n1);
  EXPECT_TRUE(lb.try_lock_for(20s));  // freed with the session
  // The renewal thread notices the dead session by itself and reports both holds lost.
  EXPECT_TRUE(eventually([&] { return lost.load() == 2; }));
  EXPECT_TRUE(l1.lost());
  EXPECT_TRUE(l2.lost());
  EXPECT_FALSE(l1.renew());
  l1.unlock();  // must not disturb b's hold
  l2.unlock();
  auto lc = a.make_lock(n1);
  EXPECT_FALSE(lc.try_lock());  // a's replacement session sees b's hold
  lb.unlock();
  EXPECT_TRUE(lc.try_lock());
  lc.unlock();
  EXPECT_GE(a.stats().losses, 2u);
}

TEST_F(postgres, pessimistic_hold_survives_a_killed_pooled_connection) {
  std::string app_name = "sqlock-test-" + random_token().substr(0, 10);
  auto a = sqlock::connect(pg::with(owner_, "mode=pessimistic&application_name=" + app_name));
  auto n = unique_name("pool-kill");
  auto l = a.make_lock(n);
  ASSERT_TRUE(l.try_lock());
  {
    auto c = dba();
    pqxx::work tx(c);
    auto r = tx.exec_params(
        "SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity "
        "WHERE application_name = $1",
        app_name);
    tx.commit();
    EXPECT_GE(r[0][0].as<int>(), 1);
  }
  // The lease, not the connection, holds the lock: renewal reconnects and still owns it.
  EXPECT_TRUE(l.renew());
  EXPECT_FALSE(l.lost());
  auto b = sqlock::connect(pg::with(owner_, "mode=pessimistic"));
  EXPECT_FALSE(b.make_lock(n).try_lock());
  l.unlock();
  EXPECT_TRUE(b.make_lock(n).try_lock());
}

// ---- schema ----

TEST_F(postgres, missing_schema_is_a_clear_error_naming_sqlock_migrate) {
  std::string schema = "sqlock_missing_" + random_token().substr(0, 8);
  for (const auto& base : {owner_, app_}) {
    for (const char* mode : {"pessimistic", "advisory"}) {
      try {
        sqlock::connect(pg::with(base, std::string("schema=") + schema + "&mode=" + mode));
        ADD_FAILURE() << "connect succeeded without a schema";
      } catch (const config_error& e) {
        std::string what = e.what();
        EXPECT_NE(what.find("sqlock migrate"), std::string::npos) << what;
        EXPECT_NE(what.find("missing"), std::string::npos) << what;
        EXPECT_EQ(what.find(":sqlock_app@"), std::string::npos) << "password leaked: " << what;
        EXPECT_EQ(what.find(":sqlock_owner@"), std::string::npos) << "password leaked: " << what;
      }
    }
  }
}

class schema_guard {
 public:
  schema_guard(std::string owner_url, std::string schema)
      : url_(std::move(owner_url)), schema_(std::move(schema)) {}
  ~schema_guard() {
    try {
      pqxx::connection c(url_);
      pqxx::nontransaction tx(c);
      tx.exec("DROP SCHEMA IF EXISTS " + schema_ + " CASCADE");
      tx.exec("DROP ROLE IF EXISTS " + schema_ + "_execute");
    } catch (...) {
    }
  }
  schema_guard(const schema_guard&) = delete;
  schema_guard& operator=(const schema_guard&) = delete;

 private:
  std::string url_, schema_;
};

TEST_F(postgres, upgrade_from_v001_to_latest_keeps_existing_holds) {
  const auto& b = sqlock::postgres::bundle();
  ASSERT_GE(b.migrations.size(), 2u);
  std::string schema = "sqlock_up_" + random_token().substr(0, 8);
  schema_guard guard(owner_, schema);
  auto held = unique_name("v001-hold");
  {
    // A database that ran only V001 (as psql would, rendered for this schema) and has a live
    // hold written by a version-1 client.
    auto c = dba();
    pqxx::nontransaction tx(c);
    tx.exec(sqlock::postgres::render(b.migrations[0].text, schema));
    tx.exec_params("INSERT INTO " + schema +
                       ".locks (name, owner, mode, fence, acquired_at, expires_at) "
                       "VALUES ($1, 'v1-owner', 'pessimistic', nextval('" +
                       schema + ".fence_seq'), now(), now() + interval '1 hour')",
                   held);
  }
  std::string url = pg::with(owner_, "schema=" + schema);
  try {
    sqlock::connect(url);
    ADD_FAILURE() << "connect accepted a version-1 schema";
  } catch (const config_error& e) {
    EXPECT_NE(std::string(e.what()).find("version 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("sqlock migrate"), std::string::npos) << e.what();
  }
  {
    register_builtin_backends();
    auto be = make_backend(url);
    auto* eng = dynamic_cast<sql::engine_backend*>(be.get());
    ASSERT_NE(eng, nullptr);
    auto script = eng->migration_script();
    EXPECT_NE(script.find(schema + ".acquire_pessimistic"), std::string::npos);
    EXPECT_EQ(script.find("sqlock."), std::string::npos);         // comments included
    EXPECT_NE(script.find("sqlock migrate"), std::string::npos);  // the command is not renamed
    EXPECT_EQ(eng->migrate(), sql::latest_version(b));
    EXPECT_EQ(eng->migrate(), sql::latest_version(b));  // re-running is harmless
  }
  for (const char* mode : {"pessimistic", "optimistic"}) {
    auto c = sqlock::connect(pg::with(url, std::string("mode=") + mode));
    EXPECT_FALSE(c.make_lock(held).try_lock()) << mode;  // the version-1 hold still counts
    auto rows = c.list(held);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].owner, "v1-owner");
  }
  auto c = sqlock::connect(pg::with(url, "mode=advisory"));
  EXPECT_TRUE(c.force_release(held));
  auto l = c.make_lock(held);
  EXPECT_TRUE(l.try_lock());
  l.unlock();
  // The group role of this schema exists and may call the functions.
  auto dc = dba();
  pqxx::nontransaction tx(dc);
  auto r = tx.exec_params("SELECT has_function_privilege($1, $2, 'EXECUTE')", schema + "_execute",
                          schema + ".acquire_pessimistic(text, text, bigint, text)");
  EXPECT_TRUE(r[0][0].as<bool>());
}

TEST_F(postgres, print_script_is_every_file_in_order) {
  register_builtin_backends();
  auto be = make_backend(pg::with(owner_, "mode=pessimistic"));
  auto* eng = dynamic_cast<sql::engine_backend*>(be.get());
  ASSERT_NE(eng, nullptr);
  auto script = eng->migration_script();
  std::size_t pos = 0;
  const auto& b = sqlock::postgres::bundle();
  for (const auto& f : b.migrations) {
    auto at = script.find("migrations/postgresql/" + std::string(f.name), pos);
    ASSERT_NE(at, std::string::npos) << f.name;
    pos = at;
  }
  for (const auto& f : b.routines) {
    auto at = script.find("sql/postgresql/" + std::string(f.name), pos);
    ASSERT_NE(at, std::string::npos) << f.name;
    pos = at;
  }
  // For the default schema the files are printed exactly as they are in the repository.
  EXPECT_NE(script.find(std::string(b.routines.back().text)), std::string::npos);
}

// ---- roles ----

TEST_F(postgres, execute_only_role_can_lock_but_cannot_read_or_write_the_tables) {
  auto c = sqlock::connect(pg::with(app_, "mode=pessimistic"));
  auto n = unique_name("exec-only");
  auto l = c.make_lock(n);
  ASSERT_TRUE(l.try_lock());
  ASSERT_EQ(c.list(n).size(), 1u);
  auto* eng = dynamic_cast<sql::engine_backend*>(&c.get_backend());
  ASSERT_NE(eng, nullptr);
  EXPECT_TRUE(eng->fence_check(n, l.fence()));
  EXPECT_GE(c.sweep(), 0u);
  l.unlock();

  pqxx::connection conn(app_);
  auto denied = [&](const std::string& sql) {
    try {
      pqxx::nontransaction tx(conn);
      tx.exec(sql);
      ADD_FAILURE() << "allowed: " << sql;
    } catch (const pqxx::insufficient_privilege&) {
      // 42501 (libpqxx 6.4 does not fill sqlstate() for this subclass)
    } catch (const pqxx::sql_error& e) {
      EXPECT_EQ(e.sqlstate(), "42501") << sql << ": " << e.what();
    }
  };
  denied("SELECT * FROM sqlock.locks");
  denied("SELECT * FROM sqlock.advisory_holds");
  denied("SELECT * FROM sqlock.events");
  denied("SELECT * FROM sqlock.schema_version");
  denied(
      "INSERT INTO sqlock.locks (name, owner, mode, fence, acquired_at, expires_at) VALUES "
      "('x', 'y', 'pessimistic', 1, now(), now())");
  denied("UPDATE sqlock.locks SET expires_at = now()");
  denied("DELETE FROM sqlock.locks");
  denied("SELECT nextval('sqlock.fence_seq')");
  denied("SELECT sqlock.advisory_held(1, 1)");  // internal helpers are not granted
  denied("SELECT sqlock.log_event('x', 'y', 'z', 1, 'm', 'h')");
  denied("CREATE TABLE sqlock.mine (x int)");
  // The owner role shows the same functions are not open to PUBLIC.
  auto dc = dba();
  pqxx::nontransaction tx(dc);
  auto r = tx.exec(
      "SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
      "WHERE n.nspname = 'sqlock' AND has_function_privilege('public', p.oid, 'EXECUTE')");
  EXPECT_EQ(r[0][0].as<int>(), 0);
  auto definer = tx.exec(
      "SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
      "WHERE n.nspname = 'sqlock' AND p.prosecdef AND NOT EXISTS (SELECT 1 FROM "
      "unnest(p.proconfig) c WHERE c LIKE 'search_path=%pg_temp')");
  EXPECT_EQ(definer[0][0].as<int>(), 0) << "a SECURITY DEFINER function without a safe search_path";
}

// ---- names ----

TEST_F(postgres, odd_names_are_stored_and_keyed_verbatim_on_the_server) {
  auto tag = random_token().substr(0, 8);
  std::vector<std::string> names = {"it's " + tag, "\"; DROP SCHEMA sqlock CASCADE; -- " + tag,
                                    "$$; SELECT pg_sleep(10); $$ " + tag, "ключ-🔒-鍵 " + tag,
                                    "sqlock.locks " + tag};
  auto pc = sqlock::connect(pg::with(app_, "mode=pessimistic"));
  auto ac = sqlock::connect(pg::with(app_, "mode=advisory"));
  auto dc = dba();
  for (const auto& n : names) {
    auto lp = pc.make_lock(n);
    auto la = ac.make_lock(n + " adv");
    ASSERT_TRUE(lp.try_lock()) << n;
    ASSERT_TRUE(la.try_lock()) << n;
    pqxx::work tx(dc);
    auto r = tx.exec_params("SELECT name, octet_length(name) FROM sqlock.locks WHERE owner = $1",
                            lp.owner());
    ASSERT_EQ(r.size(), 1u) << n;
    EXPECT_EQ(r[0][0].as<std::string>(), n);
    EXPECT_EQ(r[0][1].as<std::size_t>(), n.size());
    auto k = tx.exec_params(
        "SELECT count(*) FROM sqlock.advisory_holds h JOIN pg_locks l ON l.locktype = 'advisory' "
        "AND l.pid = h.backend_pid AND (l.classid::bigint << 32 | l.objid::bigint) = h.key "
        "WHERE h.name = $1 AND h.key = sqlock.lock_key($1)",
        n + " adv");
    EXPECT_EQ(k[0][0].as<int>(), 1) << n;
    EXPECT_EQ(sqlock::postgres::lock_key(tx, n + " adv"),
              tx.exec_params1("SELECT sqlock.lock_key($1)", n + " adv")[0].as<std::int64_t>());
    tx.commit();
    lp.unlock();
    la.unlock();
  }
  // Text PostgreSQL cannot store is refused as a configuration error, not silently changed.
  EXPECT_THROW(pc.make_lock(std::string("nul\0byte", 8)).try_lock(), config_error);
  EXPECT_THROW(pc.make_lock("bad utf8 \xff\xfe " + tag).try_lock(), config_error);
  EXPECT_THROW(ac.make_lock(std::string("nul\0byte", 8)).try_lock(), config_error);
  auto l = pc.make_lock(unique_name("after-bad-names"));
  EXPECT_TRUE(l.try_lock());
  l.unlock();
}

// ---- sweeping ----

TEST_F(postgres, sweep_deletes_expired_rows_and_dead_advisory_holds) {
  // A schema of its own: sweeps by concurrently running tests cannot interfere.
  std::string schema = "sqlock_sweep_" + random_token().substr(0, 8);
  schema_guard guard(owner_, schema);
  auto owner = pg::with(owner_, "schema=" + schema);
  auto app = pg::with(app_, "schema=" + schema);
  sqlock::connect(pg::with(owner, "migrate=auto"));
  {
    auto dc = dba();
    pqxx::nontransaction tx(dc);
    tx.exec("GRANT " + schema + "_execute TO sqlock_app");
  }
  auto prefix = unique_name("sweep") + ":";
  auto c = sqlock::connect(pg::with(owner, "mode=pessimistic"));
  auto o = sqlock::connect(pg::with(owner, "mode=optimistic"));
  std::vector<mutex> held;
  for (int i = 0; i < 5; ++i) {
    held.push_back(
        c.make_lock(prefix + "p" + std::to_string(i), {.lease = 100ms, .auto_renew = false}));
    ASSERT_TRUE(held.back().try_lock());
  }
  auto released = o.make_lock(prefix + "o");
  ASSERT_TRUE(released.try_lock());
  released.unlock();  // an optimistic row stays, free
  {
    auto a = sqlock::connect(pg::with(owner, "mode=advisory&sessions=1"));
    auto la = a.make_lock(prefix + "a");
    ASSERT_TRUE(la.try_lock());
    la.unlock();
    ASSERT_TRUE(la.try_lock());
    // The session ends without a release: the row stays behind, stale.
    auto dc = dba();
    pqxx::work tx(dc);
    auto pid =
        tx.exec_params1("SELECT backend_pid FROM " + schema + ".advisory_holds WHERE name = $1",
                        prefix + "a")[0]
            .as<int>();
    tx.exec_params("SELECT pg_terminate_backend($1, 5000)", pid);
    tx.commit();
  }
  auto count_rows = [&] {
    auto dc = dba();
    pqxx::work tx(dc);
    auto r = tx.exec("SELECT (SELECT count(*) FROM " + schema + ".locks) + (SELECT count(*) FROM " +
                     schema + ".advisory_holds)");
    return r[0][0].as<int>();
  };
  EXPECT_EQ(count_rows(), 7);
  ASSERT_TRUE(eventually([&] { return c.list(prefix).empty(); }));  // leases ran out
  // The EXECUTE-only role may sweep; a batch size of 2 shows the batching.
  {
    pqxx::connection ac(app_);
    pqxx::work tx(ac);
    EXPECT_EQ(tx.exec("SELECT " + schema + ".sweep(2)")[0][0].as<int>(), 2);
    tx.commit();
  }
  EXPECT_EQ(count_rows(), 5);
  // A client sweeping in the background (client_options.sweep_every) clears the rest.
  auto s = sqlock::connect(pg::with(app, "mode=pessimistic"), {.sweep_every = 100ms});
  EXPECT_TRUE(eventually([&] { return count_rows() == 0; }));
  for (auto& l : held) l.unlock();  // long gone: unlock records the failure, never throws
  auto dc = dba();
  pqxx::work tx(dc);
  auto ev =
      tx.exec("SELECT count(*) FROM " + schema + ".events WHERE event = 'sweep'")[0][0].as<int>();
  EXPECT_GE(ev, 2);
}

// ---- fencing in the application's transaction ----

TEST_F(postgres, fence_check_in_the_applications_own_transaction) {
  auto a = sqlock::connect(pg::with(owner_, "mode=pessimistic"));
  auto b = sqlock::connect(pg::with(owner_, "mode=pessimistic"));
  auto n = unique_name("fenced");
  auto la = a.make_lock(n, {.lease = 300ms, .auto_renew = false});
  ASSERT_TRUE(la.try_lock());
  auto fence = la.fence();

  pqxx::connection app(app_);  // the application's own connection, EXECUTE-only role
  {
    pqxx::nontransaction tx(app);
    tx.exec("CREATE TEMP TABLE orders (id int PRIMARY KEY, v int)");
    tx.exec("INSERT INTO orders VALUES (42, 0)");
  }
  std::atomic<bool> b_done{false};
  std::thread taker;
  {
    pqxx::work tx(app);
    EXPECT_TRUE(sqlock::postgres::fence_check(tx, n, fence));
    EXPECT_FALSE(sqlock::postgres::fence_check(tx, n, fence + 1000));
    auto r =
        tx.exec_params("UPDATE orders SET v = v + 1 WHERE id = 42 AND sqlock.fence_check($1, $2)",
                       n, static_cast<long long>(fence));
    EXPECT_EQ(r.affected_rows(), 1u);
    // The lease runs out while the transaction is open, but the share lock fence_check took
    // keeps a new holder from taking over before this transaction ends.
    ASSERT_TRUE(eventually([&] { return a.list(n).empty(); }));
    taker = std::thread([&] {
      auto lb = b.make_lock(n);
      EXPECT_TRUE(lb.try_lock_for(30s));
      b_done = true;
      EXPECT_GT(lb.fence(), fence);
      lb.unlock();
    });
    std::this_thread::sleep_for(300ms);
    EXPECT_FALSE(b_done.load()) << "a new holder took over during the fenced transaction";
    tx.commit();
  }
  taker.join();
  EXPECT_TRUE(b_done.load());
  {
    // Now the old holder's token is stale: its fenced write changes nothing.
    auto lb = b.make_lock(n);
    ASSERT_TRUE(lb.try_lock());
    pqxx::work tx(app);
    auto r =
        tx.exec_params("UPDATE orders SET v = v + 1 WHERE id = 42 AND sqlock.fence_check($1, $2)",
                       n, static_cast<long long>(fence));
    EXPECT_EQ(r.affected_rows(), 0u);
    EXPECT_TRUE(sqlock::postgres::fence_check(tx, n, lb.fence()));
    tx.commit();
    lb.unlock();
  }
  EXPECT_FALSE(la.renew());
  la.unlock();
}

TEST_F(postgres, fence_check_sees_advisory_holds) {
  auto a = sqlock::connect(pg::with(app_, "mode=advisory"));
  auto n = unique_name("fenced-adv");
  auto l = a.make_lock(n);
  ASSERT_TRUE(l.try_lock());
  auto fence = l.fence();
  pqxx::connection app(app_);
  {
    pqxx::work tx(app);
    EXPECT_TRUE(sqlock::postgres::fence_check(tx, n, fence));
    EXPECT_FALSE(sqlock::postgres::fence_check(tx, n, fence - 1));
    tx.commit();
  }
  l.unlock();
  pqxx::work tx2(app);
  EXPECT_FALSE(sqlock::postgres::fence_check(tx2, n, fence));  // released: no longer current
}

// ---- transaction-scoped locks ----

TEST_F(postgres, transaction_scoped_locks_end_with_the_transaction) {
  auto n = unique_name("xact");
  pqxx::connection c1(app_), c2(app_);
  auto adv = sqlock::connect(pg::with(app_, "mode=advisory"));
  {
    pqxx::work t1(c1);
    sqlock::postgres::xact_lock(t1, n);
    {
      pqxx::work t2(c2);
      EXPECT_FALSE(sqlock::postgres::try_xact_lock(t2, n));
      EXPECT_FALSE(sqlock::postgres::try_xact_lock(t2, n, {.shared = true}));
      // Bounded blocking wait: lock_timeout turns into backend_error 55P03 (or a transient
      // error, which is a backend_error too).
      t2.exec("SET LOCAL lock_timeout = '100ms'");
      EXPECT_THROW(sqlock::postgres::xact_lock(t2, n), backend_error);
    }
    EXPECT_FALSE(adv.make_lock(n).try_lock());  // same key space as advisory mode
    t1.commit();
  }
  {
    pqxx::work t2(c2);
    EXPECT_TRUE(sqlock::postgres::try_xact_lock(t2, n));
    t2.abort();  // rollback releases too
  }
  auto l = adv.make_lock(n);
  ASSERT_TRUE(l.try_lock());
  {
    pqxx::work t1(c1);
    EXPECT_FALSE(sqlock::postgres::try_xact_lock(t1, n));
  }
  l.unlock();
  {
    pqxx::work a1(c1);
    EXPECT_TRUE(sqlock::postgres::try_xact_lock(a1, n, {.shared = true}));
    pqxx::work b2(c2);
    EXPECT_TRUE(sqlock::postgres::try_xact_lock(b2, n, {.shared = true}));  // shared + shared
    EXPECT_FALSE(sqlock::postgres::try_xact_lock(b2, n));
  }
  pqxx::work t(c1);
  EXPECT_THROW(sqlock::postgres::xact_lock(t, ""), config_error);
  EXPECT_THROW(sqlock::postgres::xact_lock(t, "x", {.schema = "Bad-Schema"}), config_error);
}

// ---- waiting ----

class postgres_notify : public postgres, public ::testing::WithParamInterface<const char*> {};

// With the periodic re-check pushed out to a minute, only a NOTIFY can hand the lock over
// within the 30 s the waiter allows itself.
TEST_P(postgres_notify, release_wakes_a_waiter_by_notify) {
  std::string mode = GetParam();
  client_options slow_recheck{.waiting = {.initial = 2ms, .cap = 100ms, .notify_recheck = 60s}};
  auto a = sqlock::connect(pg::with(app_, "mode=" + mode));
  auto b = sqlock::connect(pg::with(app_, "mode=" + mode), slow_recheck);
  ASSERT_TRUE(b.caps().notify);
  for (int round = 0; round < 3; ++round) {
    auto n = unique_name("notify");
    auto la = a.make_lock(n);
    ASSERT_TRUE(la.try_lock());
    std::atomic<bool> got{false};
    std::thread waiter([&] {
      auto lb = b.make_lock(n);
      got = lb.try_lock_for(30s);
      if (got) lb.unlock();
    });
    std::this_thread::sleep_for(200ms);  // let the waiter start waiting (not required)
    la.unlock();
    waiter.join();
    EXPECT_TRUE(got.load()) << mode << " round " << round;
  }
}

INSTANTIATE_TEST_SUITE_P(modes, postgres_notify,
                         ::testing::Values("pessimistic", "optimistic", "advisory"));

// ---- URLs ----

TEST(postgres_url, sqlock_parameters_are_taken_and_libpq_ones_passed_through) {
  sqlock::postgres::options o;
  auto ci = sqlock::postgres::parse_url(
      "postgresql://u:p%40ss@db.example:6432/app?sslmode=disable&mode=advisory&schema=locks"
      "&connect_timeout=3&sessions=3&pool=2&migrate=auto&listen=off",
      o);
  EXPECT_EQ(o.mode, "advisory");
  EXPECT_EQ(o.schema, "locks");
  EXPECT_EQ(o.sessions, 3u);
  EXPECT_EQ(o.pool, 2u);
  EXPECT_TRUE(o.auto_migrate);
  EXPECT_FALSE(o.listen);
  EXPECT_EQ(ci,
            "postgresql://u:p%40ss@db.example:6432/app?sslmode=disable&connect_timeout=3"
            "&client_encoding=UTF8&fallback_application_name=sqlock");
  sqlock::postgres::options o2;
  EXPECT_EQ(sqlock::postgres::parse_url("postgres:///app", o2),
            "postgres:///app?client_encoding=UTF8&fallback_application_name=sqlock");
}

TEST(postgres_url, bad_urls_are_config_errors_without_a_server) {
  register_builtin_backends();
  for (const char* u : {"postgresql://h/db?mode=exclusive", "postgresql://h/db?schema=Bad",
                        "postgresql://h/db?schema=pg_x", "postgresql://h/db?no_such_option=1",
                        "postgresql://h/db?pool=many", "postgresql://h/db?migrate=maybe",
                        "postgres://h:99999/db"}) {
    EXPECT_THROW(make_backend(u), config_error) << u;
  }
  // make_backend() does not connect: printing the script needs no server.
  auto be = make_backend("postgresql://nobody@127.0.0.1:1/none?schema=other");
  auto* eng = dynamic_cast<sql::engine_backend*>(be.get());
  ASSERT_NE(eng, nullptr);
  EXPECT_NE(eng->migration_script().find("other.acquire_advisory"), std::string::npos);
  EXPECT_EQ(be->kind(), "postgresql");
  EXPECT_EQ(be->mode(), "pessimistic");
}

TEST(postgres_url, unreachable_server_is_a_connection_error) {
  EXPECT_THROW(sqlock::connect("postgresql://u@127.0.0.1:1/db?connect_timeout=2"),
               connection_error);
}

TEST_F(postgres, wrong_password_is_a_config_error_and_redacted) {
  auto bad = owner_;
  auto at = bad.find('@');
  auto colon = bad.rfind(':', at);
  ASSERT_NE(at, std::string::npos);
  bad = bad.substr(0, colon + 1) + "wrong-secret" + bad.substr(at);
  try {
    sqlock::connect(bad);
    ADD_FAILURE() << "connected with a wrong password";
  } catch (const config_error& e) {
    EXPECT_EQ(std::string(e.what()).find("wrong-secret"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sqlock::test
