// What only the MySQL/MariaDB backend has: the DELIMITER splitter, URL parsing, GET_LOCK name
// mapping, loss on KILL CONNECTION, the EXECUTE-only user, the missing-schema error, and the
// deadlock / lock-wait-timeout retry path.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "backends/mysql/dialect.hpp"
#include "mysql_env.hpp"
#include "sqlock/client.hpp"
#include "sqlock/mysql/mysql.hpp"
#include "sqlock/random.hpp"
#include "sqlock/url.hpp"
#include "tcp_proxy.hpp"
#include "test_env.hpp"

namespace sqlock::test {
namespace {

using namespace std::chrono_literals;

// ---- no server needed ----

TEST(mysql_split, delimiter_blocks_quotes_and_comments) {
  auto s = mysql::split_script(
      "-- leading comment; not a statement\n"
      "CREATE TABLE t (a INT); # trailing comment\n"
      "INSERT INTO t VALUES (';'), (\"$$\"), (`x;y`);\n"
      "DELIMITER $$\n"
      "CREATE PROCEDURE p() BEGIN SELECT 1; /* ; */ SELECT 'a$$b'; END$$\n"
      "delimiter ;\n"
      "SELECT 2;;\n"
      "SELECT 3");
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s[0], "CREATE TABLE t (a INT)");
  EXPECT_EQ(s[1], "INSERT INTO t VALUES (';'), (\"$$\"), (`x;y`)");
  EXPECT_EQ(s[2], "CREATE PROCEDURE p() BEGIN SELECT 1; /* ; */ SELECT 'a$$b'; END");
  EXPECT_EQ(s[3], "SELECT 2");
  EXPECT_EQ(s[4], "SELECT 3");
}

TEST(mysql_split, every_shipped_file_splits_without_client_commands) {
  const auto& b = mysql::sql_bundle();
  ASSERT_FALSE(b.migrations.empty());
  ASSERT_FALSE(b.routines.empty());
  auto check = [](const sql::sql_file& f) {
    auto parts = mysql::split_script(f.text);
    EXPECT_FALSE(parts.empty()) << f.name;
    for (const auto& p : parts) {
      EXPECT_EQ(p.find("DELIMITER"), std::string::npos) << f.name << ": " << p;
      EXPECT_NE(p.substr(p.size() - 2), "$$") << f.name;
    }
  };
  for (const auto& f : b.migrations) check(f);
  for (const auto& f : b.routines) check(f);
  // The printed install script keeps the DELIMITER lines, so it runs in the mysql client as is.
  auto d = mysql::make_dialect("pessimistic");
  auto script = sql::migration_script(b, d);
  EXPECT_NE(script.find("DELIMITER $$"), std::string::npos);
  EXPECT_EQ(d.install_routines.front(), "00_functions.sql");
  EXPECT_EQ(d.install_routines.back(), "version.sql");
}

TEST(mysql_dialect, operations_are_single_calls) {
  for (std::string mode : {"pessimistic", "optimistic", "advisory"}) {
    auto d = mysql::make_dialect(mode);
    for (const auto* op : {&d.acquire, &d.renew, &d.release, &d.list, &d.force_release, &d.sweep,
                           &d.fence_check, &d.events}) {
      ASSERT_EQ(op->statements.size(), 1u) << mode << " " << op->key;
      EXPECT_EQ(op->statements[0].rfind("CALL sqlock_", 0), 0u) << op->statements[0];
    }
  }
  EXPECT_THROW(mysql::make_dialect("exclusive"), config_error);
  EXPECT_TRUE(mysql::is_transient_error(1213));
  EXPECT_TRUE(mysql::is_transient_error(1205));
  EXPECT_FALSE(mysql::is_transient_error(1062));
}

TEST(mysql_url, parses_and_rejects) {
  auto o = mysql::parse_url(
      "mariadb://u%40x:p%3Aw@db.example:3307/locks?mode=advisory&pool=2&"
      "connect_timeout=2s&ssl_mode=verify_ca&ssl_ca=/etc/ca.pem");
  EXPECT_EQ(o.user, "u@x");
  EXPECT_EQ(o.password, "p:w");
  EXPECT_EQ(o.host, "db.example");
  EXPECT_EQ(o.port, 3307);
  EXPECT_EQ(o.database, "locks");
  EXPECT_EQ(o.mode, "advisory");
  EXPECT_EQ(o.pool, 2u);
  EXPECT_EQ(o.connect_timeout, 2s);
  EXPECT_EQ(o.ssl_mode, "verify_ca");
  EXPECT_EQ(o.ssl_ca, "/etc/ca.pem");
  auto s = mysql::parse_url("mysql://app@localhost/app?socket=/run/mysqld/mysqld.sock");
  EXPECT_EQ(s.socket, "/run/mysqld/mysqld.sock");
  EXPECT_EQ(s.port, 3306);
  EXPECT_THROW(mysql::parse_url("mysql://app@host"), config_error);  // no database
  EXPECT_THROW(mysql::parse_url("mysql://app@host/db?mode=fair"), config_error);
  EXPECT_THROW(mysql::parse_url("mysql://app@host/db?bogus=1"), config_error);
  EXPECT_THROW(mysql::parse_url("mysql://app@host/db?ssl_mode=maybe"), config_error);
  EXPECT_THROW(mysql::parse_url("mysql://app@h1,h2/db"), config_error);
  EXPECT_THROW(mysql::parse_url("mysql://app@host/db?pool=many"), config_error);
  EXPECT_THROW(mysql::parse_url("mysql://app@host/db?pool=0"), config_error);
  EXPECT_THROW(mysql::parse_url("mysql://app@host/db?timeout=0"), config_error);
  EXPECT_THROW(mysql::parse_url("mysql://app@host/db?migrate=sometimes"), config_error);
  EXPECT_EQ(mysql::parse_url("mysql://app@host/db").timeout, 5s);
  EXPECT_EQ(mysql::parse_url("mysql://app@host/db?timeout=3s").connect_timeout, 3s);
  // The password never comes back in a URL error.
  for (const char* bad : {"mysql://u:Tr0ub4dor%3@h/db", "mysql://u:Tr0ub4dor@h:99999/db",
                          "mysql://u:Tr0ub4dor@h/db?pool=0", "mysql://u:Tr0ub4dor@[h/db"}) {
    try {
      mysql::parse_url(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const config_error& e) {
      EXPECT_EQ(std::string(e.what()).find("Tr0ub4dor"), std::string::npos) << e.what();
    }
  }
}

// ---- against the server ----

TEST_F(mysql_server, connects_over_the_unix_socket) {
  std::string sock = env("SQLOCK_TEST_MYSQL_SOCKET");
  if (sock.empty()) GTEST_SKIP() << "SQLOCK_TEST_MYSQL_SOCKET is not set";
  auto c = connect(with_param(url_, "socket", percent_encode(sock)));
  auto l = c.make_lock(unique_name("socket"));
  EXPECT_TRUE(l.try_lock());
  l.unlock();
}

TEST_F(mysql_server, missing_schema_names_sqlock_migrate) {
  std::string empty;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_EMPTY_URL", empty);
  with_empty_database(empty, [&] {
    for (std::string mode : {"pessimistic", "advisory"}) {
      try {
        connect(with_param(empty, "mode", mode));
        ADD_FAILURE() << "connect to a database without the schema succeeded";
      } catch (const config_error& e) {
        std::string what = e.what();
        EXPECT_NE(what.find("sqlock migrate"), std::string::npos) << what;
        EXPECT_NE(what.find("missing"), std::string::npos) << what;
        EXPECT_EQ(what.find("pw@"), std::string::npos) << "password shown: " << what;
      }
    }
    // A lock call whose procedure is not there (schema dropped behind our back) is retried for a
    // while (a live `sqlock migrate` re-creates routines), then fails naming `sqlock migrate`.
    auto b = raw_backend(empty);
    try {
      b->try_acquire(lock_request{unique_name("nop"), random_token(), 1s, "t"}, soon());
      ADD_FAILURE() << "acquire without the schema succeeded";
    } catch (const error& e) {
      EXPECT_NE(std::string(e.what()).find("sqlock migrate"), std::string::npos) << e.what();
    }
  });
}

TEST_F(mysql_server, migrate_is_repeatable_and_reports_the_version) {
  // Other test processes keep locking meanwhile: their calls ride out the re-created routines.
  auto b = raw_backend(url_);
  b->with_connection([&](sql::connection& c) {
    c.query("DO GET_LOCK('sqlock-test-migrate', 120)");
    EXPECT_EQ(b->migrate(), sql::latest_version(mysql::sql_bundle()));
    EXPECT_EQ(b->migrate(), sql::latest_version(mysql::sql_bundle()));
    c.query("DO RELEASE_LOCK('sqlock-test-migrate')");
  });
  EXPECT_NO_THROW(b->check_schema());
  auto c = connect(mode_url("pessimistic"));
  auto l = c.make_lock(unique_name("after-migrate"));
  // Not try_lock(): its one 250 ms attempt may wait out another process's migrate (DDL).
  EXPECT_TRUE(l.try_lock_for(10s));
  l.unlock();
}

TEST_F(mysql_server, bad_credentials_are_a_config_error) {
  auto o = mysql::parse_url(url_);
  o.password = "wrong-" + random_token().substr(0, 6);
  EXPECT_THROW(connect_with(o), config_error);
}

// A forced release names who forced it in sqlock_audit, read back through events() by an
// EXECUTE-only user: the actor the client passes (bound), then the user the server
// authenticated; in advisory mode too. The procedure of schema version 5, which older clients
// call, names the user alone.
TEST_F(mysql_server, a_forced_release_names_its_actor_beside_the_user) {
  std::string exec;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_EXEC_URL", exec);
  auto raw = raw_backend(exec);
  const auto user = single(query(*raw, "SELECT USER()"));
  const std::string actor = "o'brien\\ :name; --";
  for (std::string mode : {"pessimistic", "advisory"}) {
    SCOPED_TRACE(mode);
    auto app = connect(with_param(exec, "mode", mode));
    auto holder = connect(mode_url(mode));
    const auto n = unique_name("actor");
    auto l = holder.make_lock(n);
    ASSERT_TRUE(l.try_lock());
    EXPECT_TRUE(app.force_release(n, actor));
    l.unlock();
    auto events = app.events(n, 10);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].event, "force_release");
    EXPECT_EQ(events[0].name, n);
    EXPECT_EQ(events[0].actor, actor + " (user " + user + ")");
    EXPECT_EQ(events[0].mode, mode == "advisory" ? "advisory" : "");
    EXPECT_FALSE(events[0].at.empty());
  }
  auto holder = connect(mode_url("pessimistic"));
  const auto n = unique_name("actor-v5");  // letters, digits and '-': safe to splice here
  auto l = holder.make_lock(n);
  ASSERT_TRUE(l.try_lock());
  EXPECT_EQ(single(query(*raw, "CALL sqlock_force_release('" + n + "')")), "1");
  l.unlock();
  auto events = holder.events(n, 10);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].actor, user);
}

TEST_F(mysql_server, execute_only_user_locks_but_cannot_touch_tables) {
  std::string exec;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_EXEC_URL", exec);
  for (std::string mode : {"pessimistic", "optimistic", "advisory"}) {
    SCOPED_TRACE(mode);
    auto app = connect(with_param(exec, "mode", mode));  // schema check works with EXECUTE only
    auto other = connect(mode_url(mode));
    auto n = unique_name("exec");
    auto l = app.make_lock(n);
    ASSERT_TRUE(l.try_lock());
    EXPECT_GT(l.fence(), 0u);
    EXPECT_FALSE(other.make_lock(n).try_lock());
    auto rows = app.list(n);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].owner, l.owner());
    EXPECT_TRUE(l.renew());
    l.unlock();
    auto lo = other.make_lock(n);
    EXPECT_TRUE(lo.try_lock());
    lo.unlock();
  }
  // The tables themselves are out of reach: only the DEFINER procedures touch them.
  auto raw = raw_backend(exec);
  EXPECT_THROW(query(*raw, "SELECT COUNT(*) FROM sqlock_locks"), config_error);
  EXPECT_THROW(query(*raw, "DELETE FROM sqlock_locks"), config_error);
  EXPECT_THROW(query(*raw, "UPDATE sqlock_counters SET value = 0"), config_error);
  EXPECT_THROW(raw->migrate(), error);
}

TEST_F(mysql_server, kill_connection_frees_an_advisory_lock_and_the_holder_sees_loss) {
  std::string admin;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_ADMIN_URL", admin);
  auto a = connect(mode_url("advisory"));
  auto b = connect(mode_url("advisory"));
  auto n = unique_name("kill");
  auto la = a.make_lock(n, {.lease = 900ms});  // renewal (a liveness check) every 300 ms
  std::atomic<int> told{0};
  la.on_lost([&](const std::string&) { ++told; });
  la.lock();
  auto lb = b.make_lock(n);
  EXPECT_FALSE(lb.try_lock());

  // Find the holding session the way a DBA would, and kill it.
  auto killer = raw_backend(admin);
  auto id = single(query(*killer, "SELECT IS_USED_LOCK('sqlock:" + n + "')"));
  ASSERT_NE(id, "NULL") << "readable GET_LOCK name expected for " << n;
  query(*killer, "KILL CONNECTION " + id);

  EXPECT_TRUE(lb.try_lock_for(20s));  // the server freed the lock with the session
  auto until = std::chrono::steady_clock::now() + 30s;  // liveness bound only
  while (!la.lost() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(la.lost());  // noticed by the renewal thread
  EXPECT_EQ(told.load(), 1);
  EXPECT_FALSE(la.renew());
  la.unlock();  // must not disturb b's hold
  EXPECT_FALSE(a.make_lock(n).try_lock());
  lb.unlock();
  EXPECT_TRUE(a.make_lock(n).try_lock());
}

TEST_F(mysql_server, long_and_case_variant_names_map_to_distinct_get_lock_names) {
  std::string admin;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_ADMIN_URL", admin);
  auto a = connect(mode_url("advisory"));
  auto b = connect(mode_url("advisory"));
  std::string tag = random_token().substr(0, 8);
  std::string long_name = "long:" + tag + ":" + std::string(70, 'z');  // > 64 characters
  const std::vector<std::string> names = {
      "orders:" + tag,        "Orders:" + tag,
      "ORDERS:" + tag,        long_name,
      long_name + "y",        std::string(80, 'Q') + tag,
      "spaced name " + tag,   "spaced name " + tag + " ",
      "orders:" + tag + "\n", "ß-straße-" + tag,
  };
  std::vector<mutex> held;
  for (const auto& n : names) {
    held.push_back(a.make_lock(n));
    ASSERT_TRUE(held.back().try_lock()) << n;
  }
  for (const auto& n : names) EXPECT_FALSE(b.make_lock(n).try_lock()) << n;
  // The client's copy of the name mapping agrees with the server's: the check of a hold and its
  // release go to the GET_LOCK name the server holds.
  for (auto& l : held) EXPECT_TRUE(l.renew()) << l.name();
  auto listed = a.list("");
  for (const auto& n : names) {
    EXPECT_TRUE(std::any_of(listed.begin(), listed.end(), [&](auto& s) { return s.name == n; }))
        << "not listed verbatim: " << n;
  }
  // The server sees at most 64 characters: readable for a plain lower-case name, hashed else.
  auto killer = raw_backend(admin);
  // (MySQL 5.7+ compares GET_LOCK names case-insensitively, MariaDB does not: mixed-case names
  // are hashed on both, so the mapping is the same whichever server runs.)
  EXPECT_NE(single(query(*killer, "SELECT IS_USED_LOCK('sqlock:orders:" + tag + "')")), "NULL");
  EXPECT_EQ(single(query(*killer, "SELECT IS_USED_LOCK('sqlock:Orders:" + tag + "')")), "NULL");
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i == 0) continue;
    auto hashed =
        "CONCAT('sqlock#', LEFT(SHA2('" + names[i] + "', 256), 57))";  // no quotes in names
    EXPECT_NE(single(query(*killer, "SELECT IS_USED_LOCK(" + hashed + ")")), "NULL") << names[i];
  }
  for (auto& l : held) l.unlock();
  for (const auto& n : names) {
    auto l = b.make_lock(n);
    EXPECT_TRUE(l.try_lock()) << n;
    l.unlock();
  }
}

TEST_F(mysql_server, long_names_in_lease_modes_are_keyed_by_hash_and_kept_whole) {
  for (std::string mode : {"pessimistic", "optimistic"}) {
    auto a = connect(mode_url(mode));
    auto b = connect(mode_url(mode));
    std::string base = unique_name("long") + std::string(300, 'k');
    auto l1 = a.make_lock(base);
    auto l2 = a.make_lock(base + " ");  // differs only by a trailing space (no PAD SPACE)
    ASSERT_TRUE(l1.try_lock());
    ASSERT_TRUE(l2.try_lock());
    EXPECT_FALSE(b.make_lock(base).try_lock());
    auto rows = b.list(base);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].name, base);
    EXPECT_EQ(rows[1].name, base + " ");
    l1.unlock();
    l2.unlock();
  }
}

TEST_F(mysql_server, advisory_waiter_is_handed_the_lock_by_the_server) {
  auto a = connect(mode_url("advisory"));
  auto b = connect(mode_url("advisory"));
  auto n = unique_name("handoff");
  auto la = a.make_lock(n);
  la.lock();
  auto waiter = std::async(std::launch::async, [&] {
    auto lb = b.make_lock(n);
    bool got = lb.try_lock_for(30s);
    auto fence = got ? lb.fence() : 0;
    if (got) lb.unlock();
    return std::make_pair(got, fence);
  });
  std::this_thread::sleep_for(100ms);
  auto first = la.fence();
  la.unlock();
  auto [got, fence] = waiter.get();
  EXPECT_TRUE(got);
  EXPECT_GT(fence, first);
  EXPECT_GE(b.stats().contended, 1u);
}

TEST_F(mysql_server, lock_wait_timeout_is_retried_not_reported_busy) {
  // A DBA session holds the row of one lock name; the library's acquire of that name waits for
  // it, hits innodb_lock_wait_timeout (1205), and retries until the row is free.
  auto blocker = raw_backend(url_);
  auto lib = raw_backend(with_param(url_, "pool", "1"));
  query(*lib, "SET SESSION innodb_lock_wait_timeout = 1");  // the pool's only connection
  lock_request req{unique_name("timeout"), random_token(), 10s, "t"};
  {  // give the name a (free) row: an optimistic release keeps it
    auto opt = raw_backend(mode_url("optimistic"));
    auto l = opt->try_acquire(lock_request{req.name, random_token(), 10s, "t"}, soon());
    ASSERT_TRUE(l.has_value());
    ASSERT_TRUE(opt->release(*l, soon()));
  }
  std::promise<void> locked;
  std::promise<void> finish;
  auto finish_f = finish.get_future().share();
  std::thread holder([&] {
    bool signalled = false;
    try {
      blocker->with_connection([&](sql::connection& c) {
        c.query("START TRANSACTION");
        c.query("SELECT owner FROM sqlock_locks WHERE name_key = sqlock_key('" + req.name +
                "') FOR UPDATE");
        locked.set_value();
        signalled = true;
        finish_f.wait();
        c.query("COMMIT");
      });
    } catch (const std::exception& e) {
      ADD_FAILURE() << "blocking session: " << e.what();
      if (!signalled) locked.set_value();
    }
  });
  locked.get_future().wait();
  // Directly on the connection: 1205 surfaces as a transient_error.
  sql::params p;
  p.name = req.name;
  p.owner = req.owner;
  p.lease_ms = 10000;
  p.holder = "t";
  try {
    lib->with_connection([&](sql::connection& c) { c.run(lib->get_dialect().acquire, p, soon()); });
    ADD_FAILURE() << "acquire went through a locked row";
  } catch (const sql::transient_error& e) {
    EXPECT_EQ(e.code(), "1205") << e.what();
  }
  // Through the engine: retried until the DBA commits, then acquired with a fence.
  auto result = std::async(std::launch::async, [&] { return lib->try_acquire(req, soon()); });
  std::this_thread::sleep_for(1500ms);  // let at least one attempt time out (not asserted)
  finish.set_value();
  holder.join();
  auto got = result.get();
  ASSERT_TRUE(got.has_value()) << "a lock wait timeout was reported as busy";
  EXPECT_GT(got->fence, 0u);
  EXPECT_TRUE(lib->release(*got, soon()));
}

TEST_F(mysql_server, deadlock_victim_is_a_transient_error_and_retried) {
  std::string admin;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_ADMIN_URL", admin);
  auto watcher = raw_backend(admin);  // PROCESS: sees lock waits
  auto blocker = raw_backend(url_);
  auto lib = raw_backend(with_param(url_, "pool", "1"));
  auto name = unique_name("deadlock");
  const std::string owner = random_token();
  std::promise<void> mark_locked;
  std::promise<void> go_deadlock;
  std::promise<std::string> blocker_outcome;
  auto go_f = go_deadlock.get_future().share();
  std::thread dba([&] {
    bool signalled = false;
    try {
      blocker->with_connection([&](sql::connection& c) {
        // The writer mark the library's acquire deletes once it holds the name's row (it looks
        // for a committed mark first; on MariaDB its fence takes no row lock since schema
        // version 5; the counter row on MySQL 8 is not needed for the cycle): committed, then
        // locked by a heavy transaction (many rows written) so that InnoDB picks the library's
        // CALL as the victim.
        c.query(
            "INSERT INTO sqlock_writer_marks (name_key, owner, expires_at) VALUES (sqlock_key('" +
            name + "'), '" + owner + "', UTC_TIMESTAMP(6))");
        c.query("START TRANSACTION");
        c.query(
            "INSERT INTO sqlock_audit (at, action, name, by_user) "
            "SELECT UTC_TIMESTAMP(6), 'test', CONCAT('deadlock-ballast-', seq), 'test' "
            "FROM seq_1_to_300");
        c.query("SELECT owner FROM sqlock_writer_marks WHERE name_key = sqlock_key('" + name +
                "') FOR UPDATE");
        mark_locked.set_value();
        signalled = true;
        go_f.wait();
        std::string outcome = "locked";
        try {  // the library's CALL holds this row and waits for the mark: a cycle
          c.query("SELECT owner FROM sqlock_locks WHERE name_key = sqlock_key('" + name +
                  "') FOR UPDATE");
        } catch (const sql::transient_error& e) {
          outcome = "victim " + e.code();
        }
        std::this_thread::sleep_for(50ms);
        c.query("ROLLBACK");
        blocker_outcome.set_value(outcome);
      });
    } catch (const std::exception& e) {
      ADD_FAILURE() << "DBA session: " << e.what();
      if (!signalled) mark_locked.set_value();
      blocker_outcome.set_value(std::string("failed: ") + e.what());
    }
  });
  mark_locked.get_future().wait();
  const std::string lib_id = single(query(*lib, "SELECT CONNECTION_ID()"));  // its only connection
  sql::params p;
  p.name = name;
  p.owner = owner;
  p.lease_ms = 10000;
  p.holder = "t";
  auto direct = std::async(std::launch::async, [&]() -> std::string {
    try {
      lib->with_connection(
          [&](sql::connection& c) { c.run(lib->get_dialect().acquire, p, soon()); });
      return "acquired";
    } catch (const sql::transient_error& e) {
      return "transient " + e.code();
    } catch (const std::exception& e) {
      return std::string("other: ") + e.what();
    }
  });
  // Wait until the CALL is blocked on the writer mark (liveness bound only).
  auto until = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < until &&
         single(query(*watcher,
                      "SELECT COUNT(*) FROM information_schema.innodb_trx "
                      "WHERE trx_state = 'LOCK WAIT' AND trx_mysql_thread_id = " +
                          lib_id)) == "0") {
    // InnoDB refreshes this view only when it was not read for 100 ms: poll slower than that.
    std::this_thread::sleep_for(200ms);
  }
  go_deadlock.set_value();
  EXPECT_EQ(direct.get(), "transient 1213");
  EXPECT_EQ(blocker_outcome.get_future().get(), "locked");
  dba.join();
  // Through the engine the same name is simply acquired (nothing of the victim's was kept).
  auto got = lib->try_acquire(lock_request{name, p.owner, 10s, "t"}, soon());
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(lib->release(*got, soon()));
}

TEST_F(mysql_server, sweep_and_the_documented_event) {
  auto c = connect(mode_url("pessimistic"));
  auto n = unique_name("sweep");
  auto l = c.make_lock(n, {.lease = 100ms, .auto_renew = false});
  l.lock();
  std::this_thread::sleep_for(400ms);  // lease over on the server's clock
  EXPECT_GE(c.sweep(), 1u);
  EXPECT_TRUE(c.list(n).empty());
  l.unlock();
  // The CREATE EVENT of docs/backends/mysql.md is accepted by the server.
  auto b = raw_backend(url_);
  std::string ev = "sqlock_sweep_test_" + random_token().substr(0, 8);
  EXPECT_NO_THROW(
      query(*b, "CREATE EVENT " + ev + " ON SCHEDULE EVERY 1 MINUTE DO CALL sqlock_sweep(10000)"));
  EXPECT_NO_THROW(query(*b, "DROP EVENT " + ev));
}

}  // namespace
}  // namespace sqlock::test
