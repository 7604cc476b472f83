// The ZooKeeper backend against a PRIVATE standalone server (127.0.0.1:22591, started by each
// test, never the shared one): every call returns by its deadline while the server is frozen
// (SIGSTOP) or stopped, a waiter gets the lock across a server restart, and a waiter that gives
// up or whose client is destroyed leaves the queue at once (no wait for the session timeout).
// Bounds are correctness bounds ("by the deadline + 2 s"); the real figures are printed.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <thread>

#include "freeze.hpp"
#include "sqlock/client.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/zookeeper/zookeeper.hpp"
#include "test_env.hpp"
#include "zk_test_support.hpp"

using namespace sqlock;
using namespace std::chrono_literals;
using sqlock::test::deadline_slack;
using sqlock::test::eventually;
using sqlock::test::freeze_process;
using sqlock::test::unique_name;

namespace {

using clock_type = std::chrono::steady_clock;

long long ms_since(clock_type::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t).count();
}

// Runs `call`, whose deadline is 1 s away, and checks that it returned by then + deadline_slack (an
// unknown outcome, connection_error, is allowed); prints the real figure.
template <class F>
void returns_by_deadline(const std::string& what, F&& call) {
  auto start = clock_type::now();
  try {
    call(start + 1s);
  } catch (const connection_error&) {
    // allowed: the outcome is unknown
  }
  auto took = ms_since(start);
  std::cout << "[ info     ] " << what << " (deadline 1 s) returned after " << took << " ms\n";
  EXPECT_LE(std::chrono::milliseconds(took), 1s + deadline_slack) << what;
}

// try_lock_for(1s) on `l` returns by its deadline + deadline_slack, without the lock.
void waits_by_deadline(mutex& l, const std::string& what) {
  returns_by_deadline(what + ": try_lock_for",
                      [&](steady_time) { EXPECT_FALSE(l.try_lock_for(1s)); });
}

// A standalone ZooKeeper of this test only, started like scripts/servers.d/40-zookeeper.sh
// starts the shared one (tickTime 500: sessions of 1 s and more), in a temporary directory.
class private_zookeeper {
 public:
  static constexpr int port = 22591;  // 22481-22483 are the shared ensemble's election ports

  explicit private_zookeeper(const std::filesystem::path& dir) : dir_(dir) {
    std::filesystem::create_directories(dir_ / "data");
    std::ofstream(dir_ / "zoo.cfg") << "tickTime=500\ninitLimit=20\nsyncLimit=10\n"
                                    << "dataDir=" << (dir_ / "data").string() << "\n"
                                    << "clientPort=" << port << "\nclientPortAddress=127.0.0.1\n"
                                    << "minSessionTimeout=1000\nmaxSessionTimeout=60000\n"
                                    << "maxClientCnxns=0\n4lw.commands.whitelist=srvr\n"
                                    << "admin.enableServer=false\n";
    start();
  }
  ~private_zookeeper() {
    if (pid_ > 0) {
      ::kill(pid_, SIGCONT);
      ::kill(pid_, SIGKILL);
      eventually([&] { return ::kill(pid_, 0) != 0; }, 10s);
    }
  }
  private_zookeeper(const private_zookeeper&) = delete;
  private_zookeeper& operator=(const private_zookeeper&) = delete;

  std::string url(const std::string& params = "") const {
    return "zookeeper://127.0.0.1:" + std::to_string(port) + "/sqlock-test" + params;
  }

  void start() {
    const auto pidfile = dir_ / "zk.pid";
    const std::string cmd =
        "cd '" + dir_.string() +
        "' && java -Xmx128m -Xms32m -XX:+UseSerialGC -Djava.net.preferIPv4Stack=true "
        "-Dzookeeper.jmx.log4j.disable=true -Dlog4j.configuration=none "
        "-cp /usr/share/java/zookeeper.jar:/usr/share/java/log4j-1.2.jar:"
        "/usr/share/java/slf4j-log4j12.jar "
        "org.apache.zookeeper.server.quorum.QuorumPeerMain zoo.cfg >stdout.log 2>&1 & echo $! >'" +
        pidfile.string() + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    std::ifstream(pidfile) >> pid_;
    ASSERT_GT(pid_, 0);
    // A JVM that could not start (the port taken) ends: stop looking then.
    eventually([&] { return serving() || ::kill(pid_, 0) != 0; }, 90s);
    ASSERT_TRUE(::kill(pid_, 0) == 0 && serving())
        << "private ZooKeeper did not start: " << (dir_ / "stdout.log").string();
  }
  void freeze() { ASSERT_TRUE(freeze_process(pid_)) << "ZooKeeper did not stop"; }
  void thaw() { ASSERT_EQ(::kill(pid_, SIGCONT), 0); }
  void stop() {
    ::kill(pid_, SIGKILL);
    ASSERT_TRUE(eventually([&] { return ::kill(pid_, 0) != 0; }, 10s));
    pid_ = -1;
  }

 private:
  bool serving() const {
    const std::string cmd = "timeout 2 bash -c 'exec 3<>/dev/tcp/127.0.0.1/" +
                            std::to_string(port) +
                            " && printf srvr >&3 && cat <&3' 2>/dev/null | grep -q '^Mode: '";
    return std::system(cmd.c_str()) == 0;
  }
  std::filesystem::path dir_;
  pid_t pid_ = -1;
};

class zk_private : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string shared;  // the shared server's presence says java and ZooKeeper are installed
    SQLOCK_REQUIRE_URL("SQLOCK_TEST_ZOOKEEPER_URL", shared);
    register_builtin_backends();
    server_ = std::make_unique<private_zookeeper>(tmp_.path);
  }
  void TearDown() override { server_.reset(); }
  sqlock::test::temp_dir tmp_;
  std::unique_ptr<private_zookeeper> server_;
};

TEST_F(zk_private, frozen_server_every_wait_renewal_and_release_returns_by_its_deadline) {
  auto a = connect(server_->url());
  auto b = connect(server_->url());
  auto n = unique_name("frozen");
  auto la = a.make_lock(n, {.lease = 30s, .auto_renew = false});
  la.lock();
  lease_info held{n, la.owner(), la.fence(), nullptr};
  auto lb = b.make_lock(n);
  auto other = b.make_lock(unique_name("frozen-free"));
  ASSERT_TRUE(eventually([&] { return !lb.try_lock(); }, 5s));  // the session is up
  // A waiter already queued when the server freezes: its wait and its leaving the queue
  // (a delete nobody answers) end by the deadline + deadline_slack too.
  auto c = connect(server_->url());
  auto lc = c.make_lock(n);
  long long queued_took = -1;
  std::jthread queued([&] {
    auto start = clock_type::now();
    try {
      EXPECT_FALSE(lc.try_lock_for(3s));
    } catch (const connection_error&) {
    }
    queued_took = ms_since(start);
  });
  ASSERT_TRUE(eventually([&] { return zookeeper::stats(c.get_backend()).waiting == 1; }, 5s));

  server_->freeze();
  queued.join();
  std::cout << "[ info     ] frozen server, queued waiter: try_lock_for(3s) returned after "
            << queued_took << " ms\n";
  EXPECT_LE(std::chrono::milliseconds(queued_took), 3s + deadline_slack);
  waits_by_deadline(lb, "frozen server, busy lock");
  waits_by_deadline(other, "frozen server, free lock");
  auto& backend_a = a.get_backend();
  returns_by_deadline("frozen server: renew",
                      [&](steady_time deadline) { (void)backend_a.renew(held, 30s, deadline); });
  returns_by_deadline("frozen server: release",
                      [&](steady_time deadline) { (void)backend_a.release(held, deadline); });

  server_->thaw();
  // The release given up above finishes in the background: the lock frees without la.
  EXPECT_TRUE(lb.try_lock_for(20s));
  lb.unlock();
}

// release=async: unlock() returns with the server frozen and nothing recorded as failed, the
// delete goes out again after the connection is lost, and it lands once the server answers.
// release=wait (the default): the same release, waited for, fails by its deadline.
TEST_F(zk_private, async_release_returns_while_the_server_is_frozen_and_lands_after) {
  auto a = connect(server_->url("?release=async"));
  auto w = connect(server_->url());
  auto b = connect(server_->url());
  auto n = unique_name("async-frozen");
  auto m = unique_name("wait-frozen");
  auto la = a.make_lock(n);
  auto lw = w.make_lock(m);
  la.lock();
  lw.lock();
  lease_info held_w{m, lw.owner(), lw.fence(), nullptr};
  server_->freeze();
  la.unlock();
  EXPECT_EQ(a.stats().release_errors, 0u);
  EXPECT_TRUE(la.last_error().empty()) << la.last_error();
  auto& backend_w = w.get_backend();
  EXPECT_THROW((void)backend_w.release(held_w, clock_type::now() + 500ms), connection_error);
  server_->thaw();
  EXPECT_TRUE(b.make_lock(n).try_lock_for(20s));  // the async release landed
  EXPECT_TRUE(b.make_lock(m).try_lock_for(20s));  // so did the waited one, in the background
}

TEST_F(zk_private, stopped_server_waits_end_by_their_deadline) {
  auto a = connect(server_->url());
  auto n = unique_name("stopped");
  auto la = a.make_lock(n);
  ASSERT_TRUE(la.try_lock_for(5s));
  la.unlock();
  server_->stop();
  auto timed = [&](client& c, const std::string& what) {
    auto l = c.make_lock(n);
    waits_by_deadline(l, "stopped server, " + what);
  };
  timed(a, "connected client");
  auto fresh = connect(server_->url());  // what `sqlock run --wait` does: connect, then wait
  timed(fresh, "new client");
}

TEST_F(zk_private, waiter_gets_the_lock_across_a_server_restart) {
  auto a = connect(server_->url("?session_timeout=20s"));
  auto b = connect(server_->url("?session_timeout=20s"));
  auto n = unique_name("restart");
  auto la = a.make_lock(n);
  la.lock();
  auto lb = b.make_lock(n);
  std::atomic<bool> got{false};
  std::jthread waiter([&] {
    got = lb.try_lock_for(60s);
    if (got) lb.unlock();
  });
  ASSERT_TRUE(eventually([&] { return zookeeper::stats(b.get_backend()).waiting == 1; }, 10s));
  server_->stop();
  server_->start();  // sessions survive a restart within their timeout
  auto released = clock_type::now();
  bool unlocked = false;
  while (!unlocked && clock_type::now() - released < 30s) {
    try {
      la.unlock();
      unlocked = true;
    } catch (const error&) {
      std::this_thread::sleep_for(100ms);
    }
  }
  waiter.join();
  EXPECT_TRUE(got);
  std::cout << "[ info     ] waiter got the lock " << ms_since(released)
            << " ms after the restarted server was up\n";
}

// A waiter in another process, queued between the holder and the next waiter, leaves: the
// next waiter gets the lock as soon as the holder releases, not a session timeout (20 s) later.
// `how` is what the waiter process does: give up (try_lock_for times out, the process lives
// on), or be interrupted by SIGTERM while it waits (its signal thread closes the backend's
// session and _exit()s, which is what `sqlock run` must do on SIGINT).
static void next_waiter_is_not_held_up(const std::string& url, const std::string& how) {
  auto n = unique_name("left-" + how);
  int fds[2], go[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::pipe(go), 0);
  pid_t pid = ::fork();  // before this process starts ZooKeeper client threads
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(fds[0]);
    ::close(go[1]);
    char start = 0;
    if (::read(go[0], &start, 1) != 1) ::_exit(4);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before any thread: all inherit it
    try {
      auto c = connect(url);
      auto l = c.make_lock(n);
      std::thread([&] {
        eventually([&] { return zookeeper::stats(c.get_backend()).waiting == 1; }, 10s);
        char ok = 'w';
        if (::write(fds[1], &ok, 1) != 1) ::_exit(3);
        int sig = 0;
        sigwait(&set, &sig);
        zookeeper::close(c.get_backend());  // the process dies below: end the session first
        ::_exit(128 + sig);
      }).detach();
      try {
        (void)l.try_lock_for(how == "gave-up" ? 3s : 60s);
      } catch (const error&) {
        // Closed under it by the signal thread, which ends the process.
      }
      for (;;) ::pause();  // alive after giving up: only its node must go
    } catch (...) {
      ::_exit(2);
    }
  }
  ::close(fds[1]);
  ::close(go[0]);
  // However this test ends, the waiter process ends with it (an early failure must not leave
  // it holding ctest's output open).
  struct child_guard {
    pid_t pid;
    bool reaped = false;
    ~child_guard() {
      if (reaped) return;
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  } child{pid};
  auto a = connect(url);
  auto la = a.make_lock(n);
  la.lock();
  char ok = 'g';
  ASSERT_EQ(::write(go[1], &ok, 1), 1);
  ::close(go[1]);
  ASSERT_EQ(::read(fds[0], &ok, 1), 1) << "waiter process did not queue";
  ::close(fds[0]);
  auto b = connect(url);
  auto lb = b.make_lock(n);
  std::atomic<bool> got{false};
  clock_type::time_point got_at{};
  std::jthread waiter([&] {
    got = lb.try_lock_for(40s);
    got_at = clock_type::now();
    if (got) lb.unlock();  // by the thread that locked it
  });
  ASSERT_TRUE(eventually([&] { return zookeeper::stats(b.get_backend()).waiting == 1; }, 10s));
  if (how == "gave-up") {
    std::this_thread::sleep_for(4s);  // the waiter process gave up meanwhile
  } else {
    ::kill(pid, SIGTERM);
    int status = 0;
    ::waitpid(pid, &status, 0);
    child.reaped = true;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM) << status;
  }
  auto released = clock_type::now();
  la.unlock();
  waiter.join();
  ASSERT_TRUE(got);
  auto handoff = std::chrono::duration_cast<std::chrono::milliseconds>(got_at - released);
  std::cout << "[ info     ] " << how << ": next waiter in " << handoff.count()
            << " ms after the release (session timeout 20 s)\n";
  EXPECT_LT(handoff, 10s);  // far below the session timeout
}

TEST_F(zk_private, waiter_that_gave_up_does_not_hold_up_the_next) {
  next_waiter_is_not_held_up(server_->url("?session_timeout=20s"), "gave-up");
}

TEST_F(zk_private, waiter_interrupted_by_a_signal_does_not_hold_up_the_next) {
  next_waiter_is_not_held_up(server_->url("?session_timeout=20s"), "interrupted");
}

}  // namespace
