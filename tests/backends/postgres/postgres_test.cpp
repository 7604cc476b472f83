// What only the PostgreSQL backend has, part 1: session death in advisory mode (loss reported
// at once), schema checks and upgrades, the EXECUTE-only role.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
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

// ---- advisory mode: the hold dies with its session ----

TEST_F(postgres, terminated_advisory_session_frees_the_lock_and_the_holder_sees_the_loss) {
  auto a = sqlock::connect(pg::with(app_, "mode=advisory&sessions=1"));
  auto b = sqlock::connect(pg::with(app_, "mode=advisory"));
  ASSERT_TRUE(a.caps().session_bound);
  auto n1 = unique_name("adv-kill");
  auto n2 = unique_name("adv-kill-2");
  // Long leases: the first renewal is 20 s away, so only the session watcher can report the
  // loss within the bound below.
  auto l1 = a.make_lock(n1, {.lease = 60s});
  auto l2 = a.make_lock(n2, {.lease = 60s});
  std::atomic<int> lost{0};
  std::atomic<std::chrono::steady_clock::rep> last_loss{0};  // steady clock ticks
  auto on_lost = [&](const std::string&) {
    last_loss = std::chrono::steady_clock::now().time_since_epoch().count();
    ++lost;
  };
  l1.on_lost(on_lost);
  l2.on_lost(on_lost);
  ASSERT_TRUE(l1.try_lock_for(10s));
  ASSERT_TRUE(l2.try_lock_for(10s));  // multiplexed on the same (only) session
  a.list(n1);  // the holding process's list() records its advisory holds first

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
    tx.commit();
  }
  // Measured from before the terminate call, which returns once the session has ended (the
  // loss may be reported before it returns).
  auto killer = dba();
  const auto killed = std::chrono::steady_clock::now();
  {
    pqxx::nontransaction tx(killer);
    tx.exec_params("SELECT pg_terminate_backend($1, 5000)", pid);
  }
  // The session watcher notices the death at once and reports both holds lost (a correctness
  // bound of 2 s; the goal is 250 ms).
  EXPECT_TRUE(eventually([&] { return lost.load() == 2; }, 5s));
  auto latency = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::duration(last_loss.load()) - killed.time_since_epoch());
  EXPECT_LE(latency.count(), 2000);
  std::printf("[figures] advisory session terminated: both holds reported lost after %lld ms\n",
              static_cast<long long>(latency.count()));
  auto lb = b.make_lock(n1);
  EXPECT_TRUE(lb.try_lock_for(20s));  // freed with the session
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

// ---- renewals of many holds ----

TEST_F(postgres, a_batch_renewal_renews_live_holds_in_one_call_and_tells_gone_ones_apart) {
  register_builtin_backends();
  auto be = make_backend(pg::with(app_, "mode=pessimistic"));
  auto request = [](const std::string& name, lock_kind kind) {
    lock_request r;
    r.name = name;
    r.owner = random_token();
    r.lease = 2s;
    r.kind = kind;
    r.permits = kind == lock_kind::permit ? 2 : 0;
    return r;
  };
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  std::vector<lease_info> held;
  for (auto [stem, kind] :
       {std::pair{"batch-x", lock_kind::exclusive}, std::pair{"batch-s", lock_kind::shared},
        std::pair{"batch-p", lock_kind::permit}, std::pair{"batch-released", lock_kind::exclusive},
        std::pair{"batch-forced", lock_kind::exclusive}}) {
    auto l = be->try_acquire(request(unique_name(stem), kind), deadline);
    ASSERT_TRUE(l) << stem;
    l->kind = kind;
    held.push_back(*l);
  }
  ASSERT_TRUE(be->release(held[3], deadline));
  ASSERT_TRUE(be->admin()->force_release(held[4].name));
  std::vector<renewal> batch;
  for (const auto& l : held) {
    renewal r;
    r.lease = &l;
    r.duration = 3s;
    r.deadline = deadline;
    batch.push_back(r);
  }
  const auto before = std::chrono::steady_clock::now();
  be->renew_all(batch);
  using o = renewal::outcome;
  const std::vector<o> want = {o::renewed, o::renewed, o::renewed, o::gone, o::gone};
  for (std::size_t i = 0; i < batch.size(); ++i) {
    EXPECT_EQ(batch[i].result, want[i]) << held[i].name << ": " << batch[i].error;
    EXPECT_GE(batch[i].sent, before);
  }
  // Renewed to three seconds: an exclusive request is still refused after the two-second lease
  // they were taken with.
  std::this_thread::sleep_for(2200ms);
  for (std::size_t i = 0; i < 3; ++i) {
    auto other = request(held[i].name, lock_kind::exclusive);
    EXPECT_FALSE(be->try_acquire(other, deadline)) << held[i].name;
    EXPECT_TRUE(be->release(held[i], deadline)) << held[i].name;
  }
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
  denied("SELECT * FROM sqlock.advisory_shared");
  denied("DELETE FROM sqlock.advisory_shared");
  denied("SELECT sqlock.advisory_held_as(1, 1, 'ShareLock')");
  denied("SELECT sqlock.advisory_wait(1, true, 10)");
  denied("SELECT sqlock.advisory_mismatch('x', 'permit', 2)");
  denied("SELECT sqlock.advisory_released('x', 'y', 1, 'h')");
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

}  // namespace
}  // namespace sqlock::test
