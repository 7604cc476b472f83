// The etcd backend under faults: a frozen member (SIGSTOP of a private etcd) never holds a
// caller past its deadline, a waiter gets the lock after the member comes back (thawed or
// restarted), and in the
// 3-member cluster a leader change grants no lock twice and keeps fences rising, while a lost
// quorum makes renewals unknown and then the hold lost. etcd_cluster_test runs alone (it stops
// members of the shared cluster); the others one at a time (tests/backends/etcd/CMakeLists.txt).
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <memory>

#include "etcd_env.hpp"
#include "sqlock/client.hpp"
#include "sqlock/url.hpp"
#include "tcp_proxy.hpp"
#include "test_env.hpp"

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace sqlock::test {
namespace {

using namespace etcd_env;

// Starts a stopped member again when it goes out of scope: a failing test leaves the shared
// cluster whole for the tests after it.
struct member_back {
  std::string start;
  bool started = false;
  /// Starts the member now (once).
  void now() {
    if (!started) sh(start);
    started = true;
  }
  ~member_back() { now(); }
};

class etcd_cluster_test : public ::testing::Test {
 protected:
  void SetUp() override {
    SQLOCK_REQUIRE_URL("SQLOCK_TEST_ETCD_CLUSTER_URL", url_);
    SQLOCK_REQUIRE_URL("SQLOCK_TEST_ETCD_CLUSTER_CTL", ctl_);
  }
  std::string leader() {
    auto l = sh(ctl_ + " leader");
    while (!l.empty() && l.back() == '\n') l.pop_back();
    return l;
  }
  std::string url_, ctl_;
};

TEST_F(etcd_cluster_test, a_leader_change_grants_no_lock_twice_and_fences_keep_rising) {
  auto n = unique_name("leader");
  auto a = sqlock::connect(url_);
  auto b = sqlock::connect(url_);
  auto la = a.make_lock(n, {.lease = 5s});
  la.lock();
  auto first = la.fence();
  auto lb = b.make_lock(n, {.lease = 5s});
  // A hold, not the mutex: taken on the waiter's thread, used and released on this one.
  auto waiting = std::async(std::launch::async, [&] { return lb.try_acquire_for(30s); });
  auto leader = this->leader();
  ASSERT_FALSE(leader.empty());
  sh(ctl_ + " stop " + leader);
  member_back back{ctl_ + " start " + leader};  // also when the test fails or throws
  std::this_thread::sleep_for(3s);              // a new leader is elected; a held lock stays held
  EXPECT_EQ(waiting.wait_for(0s), std::future_status::timeout);
  EXPECT_FALSE(la.lost());
  la.unlock();
  auto hb = waiting.get();
  ASSERT_TRUE(hb);
  EXPECT_GT(hb.fence(), first);
  hb.release();
}

TEST_F(etcd_cluster_test, a_lost_quorum_makes_renewals_unknown_then_the_hold_lost) {
  auto n = unique_name("quorum");
  client_options o;
  o.release_timeout = 1s;
  auto a = sqlock::connect(url_ + "?timeout=500ms", o);
  auto la = a.make_lock(n, {.lease = 3s});
  std::atomic<bool> told{false};
  la.on_lost([&](const std::string&) { told = true; });
  la.lock();
  auto before = a.stats();
  // Two of three members stop: the last one has no leader and answers nothing useful.
  auto first = leader();
  ASSERT_FALSE(first.empty());
  std::string other = first == "1" ? "2" : "1";
  sh(ctl_ + " stop " + first);
  member_back first_back{ctl_ + " start " + first};
  sh(ctl_ + " stop " + other);
  member_back other_back{ctl_ + " start " + other};
  for (int i = 0; i < 400 && !told; ++i) std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(told);  // lost when the lease ran out with no renewal answered
  // The renewal in flight when the loss was declared (a tenth of the lease early) fails by its
  // own deadline, the lease end: counted as unknown then.
  for (int i = 0; i < 150 && a.stats().renewal_failures == before.renewal_failures; ++i)
    std::this_thread::sleep_for(20ms);
  EXPECT_GT(a.stats().renewal_failures, before.renewal_failures);  // unknown, not refused
  la.unlock();
  first_back.now();
  other_back.now();
  // The cluster is back: the lock is free again once the old lease expired on the server.
  auto b = sqlock::connect(url_);
  auto lb = b.make_lock(n);
  EXPECT_TRUE(lb.try_lock_for(20s));
  lb.unlock();
}

TEST(etcd_frozen, every_wait_renewal_and_release_returns_by_its_deadline) {
  std::string shared;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_ETCD_URL", shared);  // the servers are installed
  private_etcd server(22679);
  ASSERT_TRUE(server.running()) << "see " << server.dir() << "/log";
  client_options o;
  o.release_timeout = 1s;
  auto holder = sqlock::connect(server.url() + "?timeout=1s", o);
  auto l = holder.make_lock("frozen", {.lease = 3s});
  std::atomic<bool> told{false};
  l.on_lost([&](const std::string&) { told = true; });
  l.lock();
  auto waiter = sqlock::connect(server.url() + "?timeout=1s");
  auto w = waiter.make_lock("frozen");
  server.freeze();
  auto start = steady::now();
  try {
    EXPECT_FALSE(w.try_lock_for(1s));
  } catch (const connection_error&) {
    // The outcome is unknown: also an answer by the deadline.
  }
  EXPECT_LT(steady::now() - start, 1s + deadline_slack);
  // The holder's renewals get no answer: the hold is reported lost when its lease runs out.
  for (int i = 0; i < 300 && !told; ++i) std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(told);
  start = steady::now();
  l.unlock();  // bounded by the release timeout
  EXPECT_LT(steady::now() - start, 1s + deadline_slack);
  server.thaw();
}

TEST(etcd_frozen, a_waiter_gets_the_lock_after_the_server_comes_back) {
  std::string shared;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_ETCD_URL", shared);
  private_etcd server(22689);
  ASSERT_TRUE(server.running()) << "see " << server.dir() << "/log";
  auto a = sqlock::connect(server.url() + "?timeout=1s");
  auto la = a.make_lock("back", {.lease = 3s});
  la.lock();
  auto b = sqlock::connect(server.url() + "?timeout=1s");
  auto lb = b.make_lock("back");
  // A hold, not the mutex: taken on the waiter's thread, released on this one.
  auto got = std::async(std::launch::async, [&] { return lb.try_acquire_for(20s); });
  std::this_thread::sleep_for(300ms);
  server.freeze();
  std::this_thread::sleep_for(1500ms);
  server.thaw();
  la.unlock();
  auto hb = got.get();
  EXPECT_TRUE(hb);
  hb.release();
}

// A waiter whose member crashed and came back watches again: its client reconnects although
// every call it made during the outage failed (with gRPC's fail-fast calls it never did, and the
// waiter stalled until its deadline: chaos.etcd.server).
TEST(etcd_restarted, a_waiter_gets_the_lock_after_the_member_restarts) {
  std::string shared;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_ETCD_URL", shared);
  private_etcd server(22699);
  ASSERT_TRUE(server.running()) << "see " << server.dir() << "/log";
  auto a = sqlock::connect(server.url() + "?timeout=1s");
  auto la = a.make_lock("restarted", {.lease = 3s});
  la.lock();
  auto b = sqlock::connect(server.url() + "?timeout=1s");
  auto lb = b.make_lock("restarted");
  auto got = std::async(std::launch::async, [&] { return lb.try_acquire_for(20s); });
  std::this_thread::sleep_for(300ms);  // b queues and watches (not a bound)
  server.restart();
  ASSERT_TRUE(server.running()) << "see " << server.dir() << "/log";
  la.unlock();
  auto hb = got.get();
  EXPECT_TRUE(hb) << "the waiter did not get the lock after the member came back";
  hb.release();
}

// The shared member, and a proxy in front of it whose connections a test resets or blackholes.
class etcd_feed : public ::testing::Test {
 protected:
  void SetUp() override {
    SQLOCK_REQUIRE_URL("SQLOCK_TEST_ETCD_URL", shared_);
    auto u = url::parse(shared_);
    ASSERT_FALSE(u.hosts.empty());
    proxy_ = std::make_unique<tcp_proxy>("127.0.0.1", u.hosts[0].port);
    via_ = with_host_port(shared_, u.hosts[0].host, u.hosts[0].port, proxy_->port());
  }
  std::string shared_, via_;  // the member's URL, and through the proxy
  std::unique_ptr<tcp_proxy> proxy_;
};

// A waiter whose watch connection breaks (here: every connection through a proxy reset) learns
// it at once and watches again, instead of at its next keepalive (a third of its 30 s lease):
// a release right after the break hands it the lock well within its 5 s wait.
TEST_F(etcd_feed, a_waiter_whose_watch_broke_watches_again_at_once) {
  auto name = unique_name("feed-reset");
  auto a = sqlock::connect(shared_);
  auto la = a.make_lock(name);
  la.lock();
  auto b = sqlock::connect(via_);
  auto lb = b.make_lock(name, {.lease = 30s});
  auto got = std::async(std::launch::async, [&] { return lb.try_lock_for(5s); });
  std::this_thread::sleep_for(500ms);  // b queues and watches (not a bound)
  proxy_->reset_all();
  std::this_thread::sleep_for(100ms);
  la.unlock();
  EXPECT_TRUE(got.get()) << "the waiter did not see the release after its watch broke";
  if (lb.owns_lock()) lb.unlock();
}

// A holder whose watch connection breaks, and whose key is deleted while no watch can run,
// hears of the loss from the restarted feed (which reads the held keys once a new stream is
// confirmed), not at its next renewal: the lease is 30 s, so the renewal comes after 10 s, and
// the loss is awaited for 5 s from the deletion.
TEST_F(etcd_feed, a_holder_whose_watch_broke_hears_of_a_deletion_in_the_gap) {
  auto name = unique_name("feed-gap");
  auto b = sqlock::connect(via_ + "?timeout=1s");
  auto lb = b.make_lock(name, {.lease = 30s});
  std::atomic<bool> told{false};
  lb.on_lost([&](const std::string&) { told = true; });
  lb.lock();
  // The watch breaks and no new one gets through; meanwhile the key is deleted directly.
  proxy_->blackhole(true);
  proxy_->reset_all();
  std::this_thread::sleep_for(300ms);  // the stream has ended (not a bound)
  auto key = keys(shared_, name);
  ASSERT_FALSE(key.empty());
  while (!key.empty() && key.back() == '\n') key.pop_back();
  sh(etcdctl(shared_, "del '" + key + "' >/dev/null"));
  EXPECT_FALSE(told);  // no stream delivered it
  proxy_->blackhole(false);
  for (int i = 0; i < 250 && !told; ++i) std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(told) << "the deletion in the watch's gap was not reported before the renewal";
  if (lb.owns_lock()) lb.unlock();
}

TEST(etcd_tls, a_member_that_requires_client_certificates) {
  std::string shared;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_ETCD_URL", shared);
  private_etcd server(22699, true, true);
  ASSERT_TRUE(server.running()) << "see " << server.dir() << "/log";
  ASSERT_NE(server.etcdctl("endpoint health 2>&1").find("is healthy"), std::string::npos);
  // Both wires: gRPC (the default) and the JSON gateway.
  for (const std::string wire : {"", "&transport=json"}) {
    SCOPED_TRACE(wire);
    auto c = sqlock::connect(server.url() + wire);
    auto l = c.make_lock("tls");
    ASSERT_TRUE(l.try_lock());
    EXPECT_FALSE(sqlock::connect(server.url() + wire).make_lock("tls").try_lock());
    l.unlock();
    // Without the client certificate, or without the CA to check the member against: refused.
    auto d = server.dir().string();
    EXPECT_THROW(sqlock::connect("etcds://127.0.0.1:22699/private?cacert=" + d + "/ca.crt" + wire),
                 error);
    EXPECT_THROW(sqlock::connect("etcds://127.0.0.1:22699/private?cert=" + d +
                                 "/client.crt&key=" + d + "/client.key" + wire),
                 error);
  }
}

TEST(etcd_tls, a_member_with_authentication) {
  std::string shared;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_ETCD_URL", shared);
  private_etcd server(22709);
  ASSERT_TRUE(server.running()) << "see " << server.dir() << "/log";
  server.etcdctl("user add root --new-user-password=root-pw >/dev/null 2>&1");
  server.etcdctl("user grant-role root root >/dev/null 2>&1");
  server.etcdctl("auth enable >/dev/null 2>&1");
  auto c = sqlock::connect(server.url("root:root-pw@"));
  auto l = c.make_lock("auth");
  ASSERT_TRUE(l.try_lock());
  EXPECT_FALSE(sqlock::connect(server.url("root:root-pw@")).make_lock("auth").try_lock());
  l.unlock();
  // A wrong password: auth_error, and the password is not in it.
  try {
    sqlock::connect(server.url("root:wrong-s3cr3t@"));
    ADD_FAILURE() << "a wrong password was accepted";
  } catch (const auth_error& e) {
    EXPECT_EQ(std::string(e.what()).find("s3cr3t"), std::string::npos) << e.what();
  }
  // No user at all on a member with authentication on: refused as auth_error too.
  EXPECT_THROW(sqlock::connect(server.url()).make_lock("auth").try_lock(), auth_error);
}

// TLS (the member's certificate checked against the CA; no client certificate) together with
// user/password authentication: locks work, a wrong password is refused as auth_error, and
// the password appears in no message, neither the library's nor the command line's.
TEST(etcd_tls, a_member_with_tls_and_authentication) {
  std::string shared;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_ETCD_URL", shared);
  private_etcd server(22719, true, false);
  ASSERT_TRUE(server.running()) << "see " << server.dir() << "/log";
  server.etcdctl("user add root --new-user-password=r00t-s3cr3t >/dev/null 2>&1");
  server.etcdctl("user grant-role root root >/dev/null 2>&1");
  ASSERT_NE(server.etcdctl("auth enable 2>&1").find("Authentication Enabled"), std::string::npos);
  const auto good = server.url("root:r00t-s3cr3t@");
  ASSERT_EQ(good.rfind("etcds://", 0), 0u);
  const auto bad = server.url("root:wr0ng-pa55@");
  // Both wires: gRPC (the default, the token in the call's metadata) and the JSON gateway.
  for (const std::string wire : {"", "&transport=json"}) {
    SCOPED_TRACE(wire);
    auto c = sqlock::connect(good + wire);
    auto l = c.make_lock("tls-auth");
    ASSERT_TRUE(l.try_lock());
    EXPECT_FALSE(sqlock::connect(good + wire).make_lock("tls-auth").try_lock());
    EXPECT_EQ(c.list("").size(), 1u);
    l.unlock();
    // The key went through TLS with the token: etcdctl (as root) sees nothing left.
    EXPECT_EQ(server.etcdctl("--user=root:r00t-s3cr3t get --prefix private/ --keys-only 2>&1"), "");
    try {
      sqlock::connect(bad + wire).make_lock("tls-auth").try_lock();
      ADD_FAILURE() << "a wrong password was accepted";
    } catch (const auth_error& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("authentication"), std::string::npos) << what;
      EXPECT_EQ(what.find("wr0ng-pa55"), std::string::npos) << what;
    }
    // No password at all on this member: refused as auth_error too.
    EXPECT_THROW(sqlock::connect(server.url() + wire).make_lock("tls-auth").try_lock(), auth_error);
  }
  // The command line: the right password works, a wrong one fails clearly, neither is shown.
  const std::string cli = SQLOCK_CLI_PATH;
  auto ok = sh(cli + " run --url '" + good + "' tls-auth -- echo held 2>&1; echo \"exit $?\"");
  EXPECT_NE(ok.find("held"), std::string::npos) << ok;
  EXPECT_NE(ok.find("exit 0"), std::string::npos) << ok;
  EXPECT_EQ(ok.find("r00t-s3cr3t"), std::string::npos) << ok;
  for (const std::string& cmd : {" list --url '" + bad + "'", " run --url '" + bad + "' x -- true",
                                 " release --force --url '" + bad + "' x"}) {
    auto out = sh(cli + cmd + " 2>&1; echo \"exit $?\"");
    EXPECT_EQ(out.find("wr0ng-pa55"), std::string::npos) << out;
    EXPECT_EQ(out.find("exit 0"), std::string::npos) << out;
    EXPECT_NE(out.find("authentication"), std::string::npos) << cmd << ": " << out;
  }
}

}  // namespace
}  // namespace sqlock::test
