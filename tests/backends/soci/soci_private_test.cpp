// soci+mysql against a server that misbehaves: a PRIVATE MariaDB (started by the CTest fixture
// private_mariadb.sh, never the shared development server) frozen with SIGSTOP or killed and
// restarted. Every wait, renewal and release through SOCI returns by its deadline whatever the
// server does; a waiter rides out a restart and gets the lock. The bounds are correctness
// bounds (deadline + a generous slack); the measured figures are printed for the notes.
#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <thread>

#include "freeze.hpp"
#include "soci_env.hpp"
#include "sqlock/backend.hpp"
#include "sqlock/client.hpp"

namespace sqlock::test {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

long long ms_since(clock_type::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t).count();
}

class soci_private : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ifstream in(std::string(SQLOCK_SOCI_PRIVATE_DIR) + "/url");
    if (!(in >> url_)) {
      if (require_all()) FAIL() << "the private MariaDB instance did not start";
      GTEST_SKIP() << "no private MariaDB instance (mariadb-server not installed)";
    }
    ensure_schema(url_);
  }
  void TearDown() override { signal_server(SIGCONT); }

  pid_t server_pid() const {
    std::ifstream pidfile(std::string(SQLOCK_SOCI_PRIVATE_DIR) + "/mysql/mysqld.pid");
    pid_t pid = 0;
    pidfile >> pid;
    return pid;
  }
  void signal_server(int sig) const {
    if (pid_t pid = server_pid(); pid > 0) ::kill(pid, sig);
  }
  void restart_server() const {
    std::string cmd = std::string(SQLOCK_SOCI_PRIVATE_CTL) + " restart " + SQLOCK_SOCI_PRIVATE_DIR;
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }

  std::string url_;
};

TEST_F(soci_private, a_frozen_server_bounds_every_wait_renewal_and_release) {
  auto b = sqlock::soci::open(url_);
  b->verify();
  lock_request req{unique_name("soci-frozen"), random_token(), 30s, "test"};
  auto lease = b->try_acquire(req, soon());
  ASSERT_TRUE(lease);

  ASSERT_TRUE(freeze_process(server_pid())) << "MariaDB did not stop";
  auto d = clock_type::now() + 1s;
  ends_by(
      d, [&] { b->renew(*lease, 30s, d); }, "renew");
  d = clock_type::now() + 1s;
  ends_by(
      d, [&] { b->release(*lease, d); }, "release");
  lock_request other{unique_name("soci-frozen"), random_token(), 30s, "test"};
  d = clock_type::now() + 1s;
  ends_by(
      d, [&] { b->try_acquire(other, d); }, "try_acquire");
  client c(b, {});
  auto l = c.make_lock(other.name);
  auto start = clock_type::now();
  try {
    EXPECT_FALSE(l.try_lock_for(2s));
  } catch (const connection_error&) {
  }
  auto took = ms_since(start);
  EXPECT_LT(took, 2000 + 2000);
  std::printf("soci+mysql, server frozen: try_lock_for(2s) returned after %lld ms\n", took);

  signal_server(SIGCONT);
  // New sessions work again. The release sent while frozen may still run when the server
  // thaws and reads it (its outcome was unknown), so either release frees the name.
  EXPECT_NO_THROW(b->release(*lease, soon()));
  lock_request after{req.name, random_token(), 30s, "test"};
  auto again = b->try_acquire(after, soon());
  ASSERT_TRUE(again) << "the name is still held after the server thawed";
  EXPECT_TRUE(b->release(*again, soon()));
}

TEST_F(soci_private, a_waiter_rides_out_a_restart_and_gets_the_lock) {
  auto holder = sqlock::soci::open(url_);
  lock_request req{unique_name("soci-restart"), random_token(), 2s, "holder"};
  ASSERT_TRUE(holder->try_acquire(req, soon()));  // never renewed: ends in 2 s
  auto waiter = sqlock::connect(url_);
  auto l = waiter.make_lock(req.name);
  auto before = server_pid();
  auto start = clock_type::now();
  std::thread restart([&] {
    std::this_thread::sleep_for(300ms);
    restart_server();
  });
  bool got = false;
  try {
    got = l.try_lock_for(40s);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "the waiter gave up: " << e.what();
  }
  restart.join();
  EXPECT_TRUE(got);
  EXPECT_NE(server_pid(), before) << "the server was not restarted";
  std::printf("soci+mysql, server restarted during the wait: lock after %lld ms\n",
              ms_since(start));
  if (got) l.unlock();
}

}  // namespace
}  // namespace sqlock::test
