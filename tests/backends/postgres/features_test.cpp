// What only the PostgreSQL backend has, part 2: names as the server sees them (and names it
// cannot store, refused before sending), sweeping, fencing inside the application's own
// transaction, transaction-scoped locks, NOTIFY wake-ups.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "backends/postgres/dialect.hpp"
#include "pg_env.hpp"
#include "sql/sql_engine.hpp"
#include "sqlock/backend.hpp"
#include "sqlock/postgres/postgres.hpp"
#include "sqlock/postgres/xact_lock.hpp"
#include "sqlock/random.hpp"

namespace sqlock::test {
namespace {

using namespace std::chrono_literals;

// ---- names ----

TEST_F(postgres, odd_names_are_stored_and_keyed_verbatim_on_the_server) {
  auto tag = random_token().substr(0, 8);
  std::vector<std::string> names = {"it's " + tag, "\"; DROP SCHEMA sqlock CASCADE; -- " + tag,
                                    "$$; SELECT pg_sleep(10); $$ " + tag, "ключ-🔒-鍵 " + tag,
                                    "sqlock.locks " + tag};
  auto pc = sqlock::connect(pg::with(app_, "mode=pessimistic"), patient_tries());
  auto ac = sqlock::connect(pg::with(app_, "mode=advisory"), patient_tries());
  auto dc = dba();
  for (const auto& n : names) {
    auto lp = pc.make_lock(n);
    auto la = ac.make_lock(n + " adv");
    ASSERT_TRUE(lp.try_lock()) << n;
    ASSERT_TRUE(la.try_lock()) << n;
    ac.list(n + " adv");  // the holding process's list() records its advisory holds first
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

// Names PostgreSQL cannot store or index are refused before anything is sent, with a short
// message of the client's (no server error quoting function source), in every mode; the
// longest name allowed (2600 bytes) works.
TEST_F(postgres, names_it_cannot_store_are_config_errors_before_sending) {
  for (const char* mode : {"pessimistic", "optimistic", "advisory"}) {
    auto c = sqlock::connect(pg::with(app_, std::string("mode=") + mode));
    auto tag = random_token().substr(0, 8);
    for (const std::string& bad :
         {"bad utf8 \xff\xfe " + tag, "surrogate \xed\xa0\x80 " + tag, "overlong \xc0\xaf " + tag,
          tag + std::string(2601 - tag.size(), 'x')}) {
      try {
        c.make_lock(bad).try_lock();
        ADD_FAILURE() << mode << ": accepted a bad name";
      } catch (const config_error& e) {
        std::string what = e.what();
        EXPECT_LT(what.size(), 200u) << mode << ": " << what;
        EXPECT_EQ(what.find("PL/pgSQL"), std::string::npos) << what;
      }
    }
    auto longest = c.make_lock(tag + std::string(2600 - tag.size(), 'y'));
    EXPECT_TRUE(longest.try_lock()) << mode;
    longest.unlock();
  }
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
    a.list(prefix + "a");  // records the hold (the holding process's list() does that first)
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
  // Long enough for the checks below to run before it ends on a loaded machine (connecting
  // the application's connection alone took 250 ms there); it then runs out during the test.
  auto la = a.make_lock(n, {.lease = 2s, .auto_renew = false});
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
  auto adv = sqlock::connect(pg::with(app_, "mode=advisory"), patient_tries());
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

}  // namespace
}  // namespace sqlock::test

namespace sqlock::test {

// The audit trail through the public API (what `sqlock serve` shows): a forced release is
// recorded with its name, fence and actor; the prefix filters literally; the limit holds.
TEST_F(postgres, the_audit_trail_is_read_through_events) {
  auto app = sqlock::connect(app_, patient_tries());
  ASSERT_TRUE(app.caps().events);
  auto prefix = unique_name("events") + ":%_";  // LIKE characters are matched literally
  auto l = app.make_lock(prefix + "a");
  ASSERT_TRUE(l.try_lock());
  const auto fence = l.fence();
  EXPECT_TRUE(app.force_release(prefix + "a"));
  auto other = app.make_lock(prefix.substr(0, prefix.size() - 2) + "xx");
  ASSERT_TRUE(other.try_lock());
  app.force_release(other.name());
  auto events = app.events(prefix, 10);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].event, "force_release");
  EXPECT_EQ(events[0].name, prefix + "a");
  EXPECT_EQ(events[0].fence, fence);
  EXPECT_FALSE(events[0].actor.empty());
  EXPECT_FALSE(events[0].at.empty());
  EXPECT_EQ(app.events(prefix.substr(0, prefix.size() - 2), 1).size(), 1u);  // the limit
  EXPECT_EQ(app.events(prefix.substr(0, prefix.size() - 2), 10).size(), 2u);
  l.unlock();
  other.unlock();
}

// A forced release names who forced it: the actor the client passes (bound, kept verbatim),
// then the role the database authenticated; the one-argument call names this process's
// "user@host"; the function of schema version 12, which older clients call, names the role.
TEST_F(postgres, a_forced_release_names_its_actor_beside_the_role) {
  auto app = sqlock::connect(app_);
  pqxx::connection raw(app_);
  const auto role = pqxx::nontransaction(raw).exec1("SELECT session_user")[0].as<std::string>();
  const auto n = unique_name("actor");
  auto forced_by = [&](auto&& force) {
    auto l = app.make_lock(n);
    EXPECT_TRUE(l.try_lock());
    EXPECT_TRUE(force());
    l.unlock();
    auto events = app.events(n, 1);
    return events.empty() ? std::string("none") : events[0].actor;
  };
  const std::string odd = "o'brien\\ $1 :name; --";  // bound, never spliced
  EXPECT_EQ(forced_by([&] { return app.force_release(n, odd); }), odd + " (role " + role + ")");
  EXPECT_EQ(forced_by([&] { return app.force_release(n); }),
            default_actor() + " (role " + role + ")");
  EXPECT_EQ(forced_by([&] {
              return pqxx::nontransaction(raw)
                  .exec_params1("SELECT sqlock.force_release($1)", n)[0]
                  .as<bool>();
            }),
            role);
  EXPECT_THROW(app.force_release(n, ""), config_error);
  EXPECT_THROW(app.force_release(n, "two\nlines"), config_error);
  EXPECT_THROW(app.force_release(n, std::string(201, 'a')), config_error);
}

}  // namespace sqlock::test
