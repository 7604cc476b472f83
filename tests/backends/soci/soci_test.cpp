// What only the SOCI backend has, on each database it is built for (SQLite always; PostgreSQL
// and MySQL on the native backends' test servers): exclusion against the native backend on
// the same database, backends attached to the application's session and pool, and
// transaction-scoped locks (commit, rollback and a killed session release them; a live
// lease-based hold refuses them) with fence_check in the caller's transaction.
#include <signal.h>
#include <soci/soci.h>
#include <soci/sqlite3/soci-sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef SQLOCK_SOCI_POSTGRESQL
#include <soci/postgresql/soci-postgresql.h>
#endif
#ifdef SQLOCK_SOCI_MYSQL
#include <soci/mysql/soci-mysql.h>
#endif

#include <atomic>
#include <thread>

#include "soci_env.hpp"
#include "sqlock/client.hpp"
#include "sqlock/soci/soci.hpp"

namespace sqlock::test {
namespace {

using namespace std::chrono_literals;

// One database reached both natively and through SOCI.
struct db_case {
  std::string db;          // "sqlite3", "postgresql", "mysql"
  std::string soci;        // soci+ URL
  std::string native;      // native URL of the same database
  std::string xact_rival;  // URL of a lease-based client whose holds refuse xact locks
};

class soci_db : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const auto& db = GetParam();
    if (db == "sqlite3") {
      auto path = (tmp_.path / "locks.db").string();
      c_ = {db, "soci+sqlite3:" + path, "sqlite:" + path, "soci+sqlite3:" + path};
      sqlock::soci::open(c_.soci);  // creates the file's schema
      return;
    }
    std::string base;
    SQLOCK_REQUIRE_URL(server_url_var(db), base);
    c_ = {db, "soci+" + base, base, "soci+" + base};
    // PostgreSQL transaction-scoped locks share the key space of advisory mode.
    if (db == "postgresql") c_.xact_rival = with_param(base, "mode=advisory");
    ensure_schema(c_.soci);
  }

  // A session of the application, opened from the same setting as the soci+ URL.
  // SQLite sessions wait `sqlite_timeout_s` seconds for the database's write lock.
  std::unique_ptr<::soci::session> session(int sqlite_timeout_s = 1) {
    auto ci = sqlock::soci::connect_info_for(c_.soci);
    if (ci.backend == "sqlite3")
      return std::make_unique<::soci::session>(
          ::soci::sqlite3, ci.connection_string + " timeout=" + std::to_string(sqlite_timeout_s));
#ifdef SQLOCK_SOCI_POSTGRESQL
    if (ci.backend == "postgresql")
      return std::make_unique<::soci::session>(::soci::postgresql, ci.connection_string);
#endif
#ifdef SQLOCK_SOCI_MYSQL
    if (ci.backend == "mysql")
      return std::make_unique<::soci::session>(::soci::mysql, ci.connection_string);
#endif
    throw std::runtime_error("no SOCI backend for " + ci.backend);
  }

  temp_dir tmp_;
  db_case c_;
};

TEST_P(soci_db, soci_and_native_backends_exclude_each_other) {
  for (const char* mode : {"pessimistic", "optimistic"}) {
    auto native = sqlock::connect(with_param(c_.native, std::string("mode=") + mode));
    auto through_soci = sqlock::connect(with_param(c_.soci, std::string("mode=") + mode));
    auto n = unique_name(std::string("cross-") + mode);
    auto a = native.make_lock(n);
    auto b = through_soci.make_lock(n);
    a.lock();
    EXPECT_FALSE(b.try_lock()) << mode;
    auto first = a.fence();
    a.unlock();
    ASSERT_TRUE(b.try_lock_for(5s)) << mode;
    EXPECT_GT(b.fence(), first) << mode;
    EXPECT_FALSE(a.try_lock()) << mode;
    auto listed = native.list(n);
    ASSERT_EQ(listed.size(), 1u) << mode;
    EXPECT_EQ(listed[0].owner, b.owner());
    b.unlock();
    EXPECT_TRUE(a.try_lock()) << mode;
    a.unlock();
  }
}

TEST_P(soci_db, attached_session_runs_lease_locks_and_refuses_inside_a_transaction) {
  auto s = session();
  sqlock::client mine(sqlock::soci::attach(*s));
  auto other = sqlock::connect(c_.soci);
  auto n = unique_name("attached");
  auto l = mine.make_lock(n);
  ASSERT_TRUE(l.try_lock());
  EXPECT_FALSE(other.make_lock(n).try_lock());
  EXPECT_TRUE(l.renew());
  l.unlock();
  auto o = other.make_lock(n);
  EXPECT_TRUE(o.try_lock());
  o.unlock();

  // Lease-based operations never run inside the application's transaction.
  s->begin();
  auto l2 = mine.make_lock(unique_name("attached-tx"));
  EXPECT_THROW(l2.try_lock(), usage_error);
  s->rollback();
  EXPECT_TRUE(l2.try_lock());
  l2.unlock();
}

TEST_P(soci_db, attached_pool_keeps_an_exact_counter) {
  ::soci::connection_pool pool(3);
  std::vector<std::unique_ptr<::soci::session>> keep;
  for (std::size_t i = 0; i < 3; ++i) {
    auto ci = sqlock::soci::connect_info_for(c_.soci);
    auto& ps = pool.at(i);
    if (ci.backend == "sqlite3") {
      ps.open(::soci::sqlite3, ci.connection_string + " timeout=5");
    }
#ifdef SQLOCK_SOCI_POSTGRESQL
    if (ci.backend == "postgresql") ps.open(::soci::postgresql, ci.connection_string);
#endif
#ifdef SQLOCK_SOCI_MYSQL
    if (ci.backend == "mysql") ps.open(::soci::mysql, ci.connection_string);
#endif
  }
  sqlock::client c(sqlock::soci::attach(pool));
  auto other = sqlock::connect(c_.soci);
  auto n = unique_name("pool");
  long counter = 0;
  std::atomic<int> inside{0}, max_inside{0}, errors{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&, t] {
      try {
        auto l = (t % 2 ? c : other).make_lock(n, {.lease = 20s});
        for (int r = 0; r < 10; ++r) {
          std::unique_lock g(l);
          int now = ++inside;
          int m = max_inside.load();
          while (now > m && !max_inside.compare_exchange_weak(m, now)) {
          }
          long v = counter;
          std::this_thread::sleep_for(200us);
          counter = v + 1;
          --inside;
        }
      } catch (...) {
        ++errors;
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(max_inside.load(), 1);
  EXPECT_EQ(counter, 40);
}

TEST_P(soci_db, xact_lock_needs_an_open_transaction) {
  auto s = session();
  EXPECT_THROW(sqlock::soci::try_lock_xact(*s, unique_name("no-tx")), usage_error);
  s->begin();
  EXPECT_THROW(sqlock::soci::try_lock_xact(*s, ""), config_error);
  s->rollback();
}

TEST_P(soci_db, xact_lock_is_held_until_commit) {
  auto s1 = session();
  auto s2 = session();
  auto n = unique_name("xact-commit");
  s1->begin();
  ASSERT_TRUE(sqlock::soci::try_lock_xact(*s1, n));
  EXPECT_TRUE(sqlock::soci::try_lock_xact(*s1, n));  // again in the same transaction
  s2->begin();
  EXPECT_FALSE(sqlock::soci::try_lock_xact(*s2, n));
  s2->rollback();
  s1->commit();
  s2->begin();
  EXPECT_TRUE(sqlock::soci::try_lock_xact(*s2, n));
  s2->commit();
  // Committed: the name is free for lease-based locks too.
  auto c = sqlock::connect(c_.xact_rival);
  auto l = c.make_lock(n);
  EXPECT_TRUE(l.try_lock());
  l.unlock();
}

TEST_P(soci_db, xact_lock_is_released_by_rollback) {
  auto s1 = session();
  auto s2 = session();
  auto n = unique_name("xact-rollback");
  {
    ::soci::transaction tx(*s1);
    ASSERT_TRUE(sqlock::soci::try_lock_xact(*s1, n));
    s2->begin();
    EXPECT_FALSE(sqlock::soci::lock_xact(*s2, n, 200ms));
    s2->rollback();
    tx.rollback();
  }
  ::soci::transaction tx2(*s2);
  EXPECT_TRUE(sqlock::soci::lock_xact(*s2, n, 5s));
  tx2.commit();
}

TEST_P(soci_db, xact_lock_waits_for_another_transaction) {
  auto s1 = session();
  auto n = unique_name("xact-wait");
  s1->begin();
  ASSERT_TRUE(sqlock::soci::try_lock_xact(*s1, n));
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    auto s2 = session(20);
    if (c_.db == "sqlite3") {
      // SQLite has one writer: the wait is for the write lock, taken by BEGIN IMMEDIATE (a
      // deferred transaction's snapshot could never see the other commit).
      *s2 << "BEGIN IMMEDIATE";
      got = sqlock::soci::lock_xact(*s2, n, 20s);
      *s2 << "COMMIT";
      return;
    }
    ::soci::transaction tx(*s2);
    got = sqlock::soci::lock_xact(*s2, n, 20s);
    tx.commit();
  });
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(got.load());
  s1->commit();
  waiter.join();
  EXPECT_TRUE(got.load());
}

TEST_P(soci_db, killed_session_releases_its_xact_lock) {
  auto n = unique_name("xact-kill");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    char ok = 'n';
    try {
      auto s = session();
      s->begin();
      if (sqlock::soci::try_lock_xact(*s, n)) ok = 'y';
      (void)!::write(ready[1], &ok, 1);
      for (;;) ::pause();  // dies holding the lock, mid-transaction
    } catch (...) {
    }
    (void)!::write(ready[1], &ok, 1);
    ::_exit(1);
  }
  char ok = 0;
  ASSERT_EQ(::read(ready[0], &ok, 1), 1);
  ::close(ready[0]);
  ::close(ready[1]);
  ASSERT_EQ(ok, 'y');
  auto s = session();
  s->begin();
  EXPECT_FALSE(sqlock::soci::try_lock_xact(*s, n));
  s->rollback();
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  bool got = false;
  auto until = std::chrono::steady_clock::now() + 30s;  // liveness bound only
  while (!got && std::chrono::steady_clock::now() < until) {
    s->begin();
    got = sqlock::soci::try_lock_xact(*s, n);
    if (got)
      s->commit();
    else
      s->rollback();
    if (!got) std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(got);
}

TEST_P(soci_db, live_lease_hold_refuses_xact_lock_without_waiting_it_out) {
  auto c = sqlock::connect(c_.xact_rival);
  auto n = unique_name("xact-vs-lease");
  auto l = c.make_lock(n);
  l.lock();
  auto s = session();
  s->begin();
  EXPECT_FALSE(sqlock::soci::try_lock_xact(*s, n));
  s->rollback();
  s->begin();
  EXPECT_FALSE(sqlock::soci::lock_xact(*s, n, 500ms));
  s->rollback();
  l.unlock();
  s->begin();
  EXPECT_TRUE(sqlock::soci::try_lock_xact(*s, n));
  s->commit();
}

TEST_P(soci_db, fence_check_in_the_callers_transaction) {
  auto c = sqlock::connect(c_.soci);
  auto n = unique_name("fence");
  auto l = c.make_lock(n);
  l.lock();
  auto s = session();
  {
    ::soci::transaction tx(*s);
    EXPECT_TRUE(sqlock::soci::fence_check(*s, n, l.fence()));
    EXPECT_FALSE(sqlock::soci::fence_check(*s, n, l.fence() + 1000));
    EXPECT_FALSE(sqlock::soci::fence_check(*s, unique_name("other"), l.fence()));
    tx.commit();
  }
  auto old = l.fence();
  l.unlock();
  EXPECT_FALSE(sqlock::soci::fence_check(*s, n, old));
}

TEST_P(soci_db, bad_urls_are_config_errors) {
  EXPECT_THROW(sqlock::connect(with_param(c_.soci, "mode=bogus")), config_error);
  EXPECT_THROW(sqlock::connect(with_param(c_.soci, "pool=x")), config_error);
  EXPECT_THROW(sqlock::connect(with_param(c_.soci, "no_such=1")), config_error);
  if (c_.db != "sqlite3") {
    EXPECT_THROW(sqlock::connect(with_param(c_.soci, "mode=advisory")), config_error);
  }
  EXPECT_THROW(sqlock::connect("soci+oracle://u@h/db"), config_error);
  EXPECT_THROW(sqlock::connect("soci+sqlite3://host/x.db"), config_error);
}

INSTANTIATE_TEST_SUITE_P(soci, soci_db, ::testing::ValuesIn(soci_databases()),
                         [](const auto& p) { return p.param; });

}  // namespace
}  // namespace sqlock::test
