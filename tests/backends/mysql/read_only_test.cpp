// Read-only MariaDB (a PRIVATE instance, CTest fixture read_only_server.sh; read_only is
// global, so never the shared server): a row-mode hold whose server turned read-only is
// reported lost at its next renewal rather than at the end of its lease, and connecting to a
// read-only server fails with a read_only_error naming it, in every mode.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "sqlock/client.hpp"
#include "sqlock/errors.hpp"
#include "test_env.hpp"

namespace sqlock::test {
namespace {

using namespace std::chrono_literals;

class mysql_read_only : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ifstream in(std::string(SQLOCK_MYSQL_RO_DIR) + "/url");
    if (!(in >> url_)) {
      if (require_all()) FAIL() << "the private MariaDB did not start";
      GTEST_SKIP() << "no private MariaDB (mariadb-server not installed)";
    }
    sqlock::connect(url_ + "?migrate=auto");
  }
  void TearDown() override { read_only(0); }
  void read_only(int on) {
    const auto cmd = std::string(SQLOCK_MYSQL_RO_CTL) + " read_only " + SQLOCK_MYSQL_RO_DIR + " " +
                     std::to_string(on);
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  std::string url_;
};

TEST_F(mysql_read_only, a_hold_is_lost_at_once_and_a_read_only_server_is_refused_naming_it) {
  auto c = sqlock::connect(url_ + "?mode=pessimistic");
  // A 9 s lease renews every 3 s; without the read-only answer the renewals would fail as
  // unknown until the lease ran out (~8 s).
  auto m = c.make_lock(unique_name("read-only"), {.lease = 9s});
  ASSERT_TRUE(m.try_lock_for(10s));
  read_only(1);
  const auto start = std::chrono::steady_clock::now();
  while (!m.lost() && std::chrono::steady_clock::now() - start < 20s)
    std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(m.lost());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 6s) << "lost only at the lease's end";
  m.unlock();

  const auto port = url_.substr(url_.rfind(':') + 1, url_.rfind('/') - url_.rfind(':') - 1);
  for (const char* mode : {"pessimistic", "optimistic", "advisory"}) {
    SCOPED_TRACE(mode);
    try {
      sqlock::connect(url_ + "?mode=" + mode);
      ADD_FAILURE() << "connected to a read-only server";
    } catch (const read_only_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("127.0.0.1:" + port + " is read-only"), std::string::npos) << what;
      EXPECT_NE(what.find("point the URL at the primary"), std::string::npos) << what;
      EXPECT_EQ(what.find("admin-pw"), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace sqlock::test
