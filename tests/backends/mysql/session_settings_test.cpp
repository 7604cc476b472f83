// The session settings of the MySQL backend's connections: the SET statement for MariaDB and
// MySQL servers of several versions, the values a live connection has, and a user of the
// test's own whose MAX_STATEMENT_TIME (a DBA's per-user limit) would end a wait in GET_LOCK:
// its holders keep their holds and its waiters wait past the limit. The user and its database
// are made by the sqlock_dba account (SQLOCK_TEST_MYSQL_DBA_URL) and dropped at the end.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "backends/mysql/session_settings.hpp"
#include "mysql_env.hpp"
#include "own_database.hpp"
#include "sqlock/client.hpp"
#include "test_env.hpp"

namespace sqlock::test {
namespace {

using namespace std::chrono_literals;

TEST(mysql_session_settings, the_statement_fits_the_server) {
  auto maria = mysql::parse_server_version("10.11.6-MariaDB-0+deb12u1");
  EXPECT_TRUE(maria.mariadb);
  EXPECT_EQ(maria.major, 10);
  EXPECT_EQ(maria.minor, 11);
  EXPECT_EQ(maria.patch, 6);
  auto old_handshake = mysql::parse_server_version("5.5.5-10.5.2-MariaDB-log");
  EXPECT_TRUE(old_handshake.mariadb);
  EXPECT_EQ(old_handshake.major, 10);
  EXPECT_EQ(old_handshake.minor, 5);
  auto mysql8 = mysql::parse_server_version("8.0.36");
  EXPECT_FALSE(mysql8.mariadb);
  EXPECT_EQ(mysql8.major, 8);

  auto s = mysql::session_settings_statement(maria, 4500ms);
  EXPECT_NE(s.find("wait_timeout = 31536000"), std::string::npos) << s;
  EXPECT_NE(s.find("interactive_timeout = 31536000"), std::string::npos) << s;
  EXPECT_NE(s.find(" lock_wait_timeout = 5"), std::string::npos) << s;
  EXPECT_NE(s.find("innodb_lock_wait_timeout = 5"), std::string::npos) << s;
  EXPECT_NE(s.find("max_statement_time = 0"), std::string::npos) << s;
  EXPECT_EQ(s.find("max_execution_time"), std::string::npos) << s;
  s = mysql::session_settings_statement(mysql8, 200ms);
  EXPECT_NE(s.find("max_execution_time = 0"), std::string::npos) << s;
  EXPECT_NE(s.find("innodb_lock_wait_timeout = 1"), std::string::npos) << s;
  EXPECT_EQ(s.find("max_statement_time"), std::string::npos) << s;
  // Servers without a statement time limit get neither name.
  for (const char* v : {"10.0.38-MariaDB", "5.7.7-rc", "5.6.51"}) {
    s = mysql::session_settings_statement(mysql::parse_server_version(v), 5s);
    EXPECT_EQ(s.find("max_statement_time"), std::string::npos) << v;
    EXPECT_EQ(s.find("max_execution_time"), std::string::npos) << v;
  }
}

TEST(mysql_session_settings, a_user_statement_time_limit_ends_no_hold_and_no_wait) {
  std::string dba_url;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_DBA_URL", dba_url);
  own_database db(dba_url);
  sqlock::connect(db.dba() + "?migrate=auto");
  const std::string user = db.make_user("WITH MAX_STATEMENT_TIME 0.3");

  // The library's session of that user: the limit off, the idle limit a year, lock waits
  // bounded by the I/O timeout (timeout=4s).
  auto raw = raw_backend(user + "?timeout=4s");
  auto r = query(*raw,
                 "SELECT @@session.max_statement_time, @@session.wait_timeout, "
                 "@@session.interactive_timeout, @@session.lock_wait_timeout, "
                 "@@session.innodb_lock_wait_timeout");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(std::stod(r[0][0].value_or("-1")), 0.0);
  EXPECT_EQ(r[0][1], "31536000");
  EXPECT_EQ(r[0][2], "31536000");
  EXPECT_EQ(r[0][3], "4");
  EXPECT_EQ(r[0][4], "4");

  auto adv = connect(with_param(user, "mode", "advisory"));
  auto row = connect(with_param(user, "mode", "pessimistic"));
  auto other = connect(with_param(db.dba(), "mode", "advisory"));
  const auto na = unique_name("my-dba-adv"), nr = unique_name("my-dba-row");
  auto ha = adv.make_lock(na, {.lease = 6s});
  auto hr = row.make_lock(nr, {.lease = 6s});
  ASSERT_TRUE(ha.try_lock_for(10s));
  ASSERT_TRUE(hr.try_lock_for(10s));

  // A waiter of the user waits in GET_LOCK (chunks of about half the 5 s I/O timeout) for 2 s,
  // past the 0.3 s limit, and gets the lock at the release.
  const auto wa = unique_name("my-dba-wait");
  auto blocker = other.make_lock(wa);
  ASSERT_TRUE(blocker.try_lock_for(10s));
  auto waiter = std::async(std::launch::async, [&adv, wa] {
    auto l = adv.make_lock(wa);
    const auto start = std::chrono::steady_clock::now();
    bool got = l.try_lock_for(20s);
    auto waited = std::chrono::steady_clock::now() - start;
    if (got) l.unlock();
    return std::make_pair(got, waited);
  });
  std::this_thread::sleep_for(2s);
  blocker.unlock();
  auto [got, waited] = waiter.get();
  EXPECT_TRUE(got);
  EXPECT_GE(waited, 1500ms);

  std::this_thread::sleep_for(1s);
  EXPECT_FALSE(ha.lost());
  EXPECT_FALSE(hr.lost());
  EXPECT_TRUE(ha.renew());
  EXPECT_TRUE(hr.renew());
  EXPECT_FALSE(other.make_lock(na).try_lock());
  EXPECT_EQ(adv.stats().losses + row.stats().losses, 0u);
  ha.unlock();
  hr.unlock();
}

}  // namespace
}  // namespace sqlock::test
