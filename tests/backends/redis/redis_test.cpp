// What only the Redis backend has: the key mapping of arbitrary names, script reload after
// SCRIPT FLUSH, a holder whose connection is killed, and Redlock with servers stopped and
// restarted. Destructive tests start their own redis-server processes on free ports (binary in
// SQLOCK_TEST_REDIS_SERVER) so the shared servers stay up for the tests running in parallel.
#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "own_redis.hpp"
#include "sqlock/client.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/redis/redis.hpp"
#include "sqlock/url.hpp"
#include "test_env.hpp"

namespace sqlock::test {
namespace {

using namespace std::chrono_literals;

class redis_single : public ::testing::Test {
 protected:
  void SetUp() override { SQLOCK_REQUIRE_URL("SQLOCK_TEST_REDIS_URL", url_); }
  std::string url_;
};

class redlock_shared : public ::testing::Test {
 protected:
  void SetUp() override { SQLOCK_REQUIRE_URL("SQLOCK_TEST_REDLOCK_URL", url_); }
  std::string url_;
};

// Destructive Redlock tests: need the server binary (the shared URL proves servers are set up).
class redlock_own : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string shared;
    SQLOCK_REQUIRE_URL("SQLOCK_TEST_REDLOCK_URL", shared);
  }
  temp_dir tmp_;
};

}  // namespace

// ---- key mapping ----

TEST(redis_keys, every_byte_round_trips_and_the_hash_tag_stays_intact) {
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  auto enc = redis::encode_name(all);
  EXPECT_EQ(redis::decode_name(enc), all);
  for (char c : std::string("{}*?[]\\\n")) EXPECT_EQ(enc.find(c), std::string::npos) << int(c);
  EXPECT_EQ(enc.find('{'), std::string::npos);
  EXPECT_EQ(enc.find('}'), std::string::npos);
  EXPECT_EQ(enc.find('*'), std::string::npos);
  auto k = redis::owner_key("sqlock", "a}b{c");
  EXPECT_EQ(k, "sqlock:{a%7Db%7Bc}:owner");
  // Every key of a lock carries the same hash tag (same cluster slot).
  auto tag = [](const std::string& key) {
    auto b = key.find('{');
    return key.substr(b, key.find('}', b) - b + 1);
  };
  EXPECT_EQ(tag(redis::owner_key("p", "x}{y")), tag(redis::fence_key("p", "x}{y")));
  EXPECT_EQ(tag(redis::owner_key("p", "x}{y")), tag(redis::info_key("p", "x}{y")));
  // Prefix-preserving: the escape of a prefix is a prefix of the escape.
  EXPECT_EQ(redis::encode_name("ab{cd").rfind(redis::encode_name("ab{"), 0), 0u);
  EXPECT_THROW(redis::decode_name("%4"), config_error);
  EXPECT_THROW(redis::decode_name("%zz"), config_error);
}

TEST_F(redis_single, binary_names_map_to_distinct_keys_and_stay_out_of_other_prefixes) {
  auto c = connect(url_);
  auto d = connect(url_);
  std::string base = unique_name("bin");
  std::string with_nul = base + std::string("\0x", 2);
  std::string braces = base + "}{*";
  auto l1 = c.make_lock(with_nul);
  auto l2 = c.make_lock(braces);
  ASSERT_TRUE(l1.try_lock());
  ASSERT_TRUE(l2.try_lock());
  auto l3 = d.make_lock(base);
  EXPECT_TRUE(l3.try_lock());  // "base" is a different lock than "base\0x"
  EXPECT_FALSE(d.make_lock(with_nul).try_lock());
  EXPECT_FALSE(d.make_lock(braces).try_lock());
  raw_redis r(port_of(url_));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.cmd({"GET", redis::owner_key("sqlock", with_nul)}), l1.owner());
  EXPECT_EQ(r.cmd({"GET", redis::owner_key("sqlock", braces)}), l2.owner());
  auto rows = c.list(base);
  EXPECT_EQ(rows.size(), 3u);
  for (auto& row : rows) {
    EXPECT_FALSE(row.expires_at.empty()) << row.name;
    EXPECT_FALSE(row.acquired_at.empty()) << row.name;
    EXPECT_FALSE(row.holder.empty()) << row.name;
    EXPECT_EQ(row.mode, "redis");
  }
  l1.unlock();
  l2.unlock();
  l3.unlock();
}

TEST_F(redis_single, acquire_is_idempotent_for_its_owner) {
  auto c = connect(url_);
  auto& b = c.get_backend();
  lock_request req{unique_name("idem"), random_token(), 5s, "test"};
  auto first = b.try_acquire(req, soon());
  ASSERT_TRUE(first);
  auto again = b.try_acquire(req, soon());  // a retry after a lost reply
  ASSERT_TRUE(again);
  EXPECT_EQ(again->fence, first->fence);
  lock_request other{req.name, random_token(), 5s, "test"};
  EXPECT_FALSE(b.try_acquire(other, soon()));
  EXPECT_TRUE(b.release(*first, soon()));
  EXPECT_FALSE(b.release(*first, soon()));
}

TEST_F(redis_single, urls_are_checked) {
  EXPECT_THROW(connect("redis://127.0.0.1:1,127.0.0.1:2"), config_error);
  EXPECT_THROW(connect("redis:"), config_error);
  EXPECT_THROW(connect(url_ + "?prefix=bad{prefix"), config_error);
  EXPECT_THROW(connect(url_ + "?pool=many"), config_error);
  EXPECT_THROW(connect(url_ + "?timeout=-1s"), config_error);
  EXPECT_THROW(connect("redis://user@127.0.0.1:" + std::to_string(port_of(url_))), config_error);
  EXPECT_THROW(connect("redis://127.0.0.1:" + std::to_string(port_of(url_)) + "/x"), config_error);
  EXPECT_THROW(
      connect("redis://127.0.0.1:" + std::to_string(free_port()) + "?connect_timeout=200ms"),
      connection_error);
  // A wrong password is a configuration problem, not something to retry.
  EXPECT_THROW(connect("redis://nobody:wrong@127.0.0.1:" + std::to_string(port_of(url_))),
               config_error);
  auto c = connect(url_ + "?prefix=sqlock-test-other&timeout=1s&connect_timeout=1s&pool=2");
  auto n = unique_name("prefix");
  auto l = c.make_lock(n);
  ASSERT_TRUE(l.try_lock());
  auto d = connect(url_);  // another prefix is another namespace
  EXPECT_TRUE(d.make_lock(n).try_lock());
  EXPECT_EQ(c.list(n).size(), 1u);
  l.unlock();
}

// ---- script cache ----

TEST_F(redis_single, scripts_are_reloaded_after_script_flush) {
  auto c = connect(url_);
  auto n = unique_name("flush");
  auto l = c.make_lock(n, {.lease = 10s, .auto_renew = false});
  ASSERT_TRUE(l.try_lock());
  raw_redis r(port_of(url_));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.cmd({"SCRIPT", "FLUSH"}), "OK");
  EXPECT_TRUE(l.renew());  // EVALSHA -> NOSCRIPT -> EVAL
  EXPECT_EQ(c.list(n).size(), 1u);
  l.unlock();
  EXPECT_TRUE(l.last_error().empty()) << l.last_error();
  EXPECT_EQ(r.cmd({"EXISTS", redis::owner_key("sqlock", n)}), "0");
  ASSERT_EQ(r.cmd({"SCRIPT", "FLUSH"}), "OK");
  EXPECT_TRUE(l.try_lock());
  EXPECT_GT(l.fence(), 0u);
  l.unlock();
}

TEST_F(redlock_shared, scripts_are_reloaded_after_script_flush_on_every_node) {
  auto c = connect(url_);
  auto n = unique_name("flush");
  auto l = c.make_lock(n, {.lease = 10s, .auto_renew = false});
  ASSERT_TRUE(l.try_lock());
  auto u = sqlock::url::parse(url_);
  for (auto& h : u.hosts) {
    raw_redis r(h.port);
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r.cmd({"SCRIPT", "FLUSH"}), "OK");
  }
  EXPECT_TRUE(l.renew());
  l.unlock();
  EXPECT_TRUE(l.last_error().empty()) << l.last_error();
  for (auto& h : u.hosts) {
    raw_redis r(h.port);
    EXPECT_EQ(r.cmd({"EXISTS", redis::owner_key("sqlock", n)}), "0") << "port " << h.port;
  }
  EXPECT_TRUE(l.try_lock());
  l.unlock();
}

// ---- connection trouble of a holder ----

// An ACL user of its own, so killing "its" connections touches no other test.
struct acl_user {
  raw_redis admin;
  std::string name = "sqlock-test-" + random_token().substr(0, 10);
  std::string password = random_token();
  explicit acl_user(int port) : admin(port) {
    EXPECT_EQ(admin.cmd({"ACL", "SETUSER", name, "on", ">" + password, "~*", "&*", "+@all"}), "OK");
  }
  ~acl_user() { admin.cmd({"ACL", "DELUSER", name}); }
  std::string url(int port) const {
    return "redis://" + name + ":" + password + "@127.0.0.1:" + std::to_string(port);
  }
};

TEST_F(redis_single, killed_connections_are_replaced_and_the_hold_survives) {
  int port = port_of(url_);
  acl_user u(port);
  auto c = connect(u.url(port));
  auto n = unique_name("kill");
  auto l = c.make_lock(n, {.lease = 5s, .auto_renew = false});
  ASSERT_TRUE(l.try_lock());
  EXPECT_NE(u.admin.cmd({"CLIENT", "KILL", "USER", u.name}), "0");
  // The key is still there: the backend reconnects and the renewal finds the hold.
  EXPECT_TRUE(l.renew());
  EXPECT_FALSE(l.lost());
  EXPECT_FALSE(connect(url_).make_lock(n).try_lock());
  l.unlock();
  EXPECT_TRUE(l.last_error().empty()) << l.last_error();
}

TEST_F(redis_single, holder_that_cannot_reconnect_after_client_kill_reports_loss) {
  int port = port_of(url_);
  acl_user u(port);
  auto c = connect(u.url(port));
  auto n = unique_name("killed");
  auto l = c.make_lock(n, {.lease = 1500ms});
  std::atomic<bool> told{false};
  l.on_lost([&](const std::string&) { told = true; });
  ASSERT_TRUE(l.try_lock());
  // Lock the user out, then cut its connections: every renewal now fails.
  ASSERT_EQ(u.admin.cmd({"ACL", "SETUSER", u.name, "off"}), "OK");
  u.admin.cmd({"CLIENT", "KILL", "USER", u.name});
  auto until = std::chrono::steady_clock::now() + 30s;  // liveness bound only
  while (!told && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(told);
  EXPECT_TRUE(l.lost());
  EXPECT_GE(c.stats().renewal_failures, 1u);
  // Meanwhile the lease ran out on the server: someone else may take it.
  auto d = connect(url_);
  auto ld = d.make_lock(n);
  EXPECT_TRUE(ld.try_lock_for(10s));
  ld.unlock();
  l.unlock();
  // Let the user back in: the client reconnects (after its backoff) and works again.
  ASSERT_EQ(u.admin.cmd({"ACL", "SETUSER", u.name, "on"}), "OK");
  auto l2 = c.make_lock(unique_name("back"));
  bool got = false;
  for (int i = 0; i < 100 && !got; ++i) {
    try {
      got = l2.try_lock();
    } catch (const error&) {
      std::this_thread::sleep_for(100ms);
    }
  }
  EXPECT_TRUE(got);
  if (got) l2.unlock();
}

// ---- waiting ----

TEST_F(redis_single, waiters_are_woken_by_release_and_by_expiry) {
  auto a = connect(url_);
  auto b = connect(url_);
  auto n = unique_name("wake");
  auto la = a.make_lock(n, {.lease = 30s});
  ASSERT_TRUE(la.try_lock());
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    auto lb = b.make_lock(n);
    got = lb.try_lock_for(20s);
    if (got) lb.unlock();
  });
  std::this_thread::sleep_for(200ms);
  la.unlock();
  waiter.join();
  EXPECT_TRUE(got);
  // A hold that expires (holder gone without releasing) is found once its lease runs out.
  auto& raw = a.get_backend();
  lock_request req{n, random_token(), 600ms, "test"};
  ASSERT_TRUE(raw.try_acquire(req, soon()));
  auto lb = b.make_lock(n);
  EXPECT_TRUE(lb.try_lock_for(20s));
  lb.unlock();
}

TEST_F(redis_single, a_waiting_acquisition_is_woken_by_the_release_message) {
  int port = port_of(url_);
  acl_user u(port);
  auto holder = connect(url_);
  auto waiter = connect(u.url(port));
  auto& hb = holder.get_backend();
  auto& wb = waiter.get_backend();
  auto n = unique_name("notify");
  auto held = hb.try_acquire({n, random_token(), 60s, "holder"}, soon());
  ASSERT_TRUE(held);
  // make_acquisition() registers interest before the first attempt is sent; the wait that
  // follows the busy attempt can only end early through the release message (the lease is 60 s).
  lock_request req{n, random_token(), 60s, "waiter"};
  auto ws = wb.make_acquisition(req, {});
  ASSERT_TRUE(ws);
  ASSERT_FALSE(ws->attempt(soon()));
  std::atomic<bool> woke{false};
  auto start = std::chrono::steady_clock::now();
  std::thread t([&] {
    ws->wait(std::chrono::steady_clock::now() + 60s, {});
    woke = true;
  });
  std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(hb.release(*held, soon()));
  t.join();
  EXPECT_TRUE(woke);
  // Liveness only: without the message this wait would last 60 s (lease and deadline).
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
  auto got = ws->attempt(soon());
  ASSERT_TRUE(got);
  // The waiter's client holds exactly one pattern subscription.
  std::string clients = u.admin.cmd({"CLIENT", "LIST"});
  int subscribed = 0;
  std::size_t pos = 0;
  while (pos < clients.size()) {
    auto end = clients.find('\n', pos);
    if (end == std::string::npos) end = clients.size();
    auto line = clients.substr(pos, end - pos);
    if (line.find("user=" + u.name) != std::string::npos &&
        line.find(" psub=1 ") != std::string::npos)
      ++subscribed;
    pos = end + 1;
  }
  EXPECT_EQ(subscribed, 1);
  EXPECT_TRUE(wb.release(*got, soon()));
}

// ---- Redlock with servers down ----

TEST_F(redlock_own, acquires_with_two_of_five_down_and_fails_cleanly_with_three) {
  own_masters m(5, tmp_.path);
  auto query = "?timeout=500ms&connect_timeout=500ms";
  auto c = connect(m.url(query));
  auto other = connect(m.url(query));
  auto n = unique_name("quorum");
  {
    auto l = c.make_lock(n);
    ASSERT_TRUE(l.try_lock());
    l.unlock();
  }
  m.servers[0]->stop();
  m.servers[1]->stop();
  auto l = c.make_lock(n, {.lease = 10s});
  ASSERT_TRUE(l.try_lock());  // 3 of 5 is a majority
  EXPECT_GT(l.fence(), 0u);
  EXPECT_FALSE(other.make_lock(n).try_lock());
  EXPECT_EQ(c.list(n).size(), 1u);
  l.unlock();
  EXPECT_TRUE(l.last_error().empty()) << l.last_error();

  m.servers[2]->stop();
  auto l3 = c.make_lock(n, {.lease = 10s});
  bool got = false;
  try {
    got = l3.try_lock();
  } catch (const connection_error&) {
    got = false;  // no majority reachable: an error, never a success
  }
  EXPECT_FALSE(got);
  EXPECT_FALSE(l3.owns_lock());
  try {
    EXPECT_FALSE(l3.try_lock_for(500ms));
  } catch (const connection_error&) {
  }
  // Nothing was left behind on the two servers that answered.
  for (std::size_t i = 3; i < 5; ++i) {
    raw_redis r(m.servers[i]->port());
    EXPECT_EQ(r.cmd({"EXISTS", redis::owner_key("sqlock", n)}), "0") << "node " << i;
  }
  EXPECT_THROW(connect(m.url(query)), connection_error);
}

TEST_F(redlock_own, a_node_restarted_mid_hold_does_not_lose_the_lock) {
  own_masters m(5, tmp_.path);
  auto query = "?timeout=500ms&connect_timeout=500ms";
  auto c = connect(m.url(query));
  auto other = connect(m.url(query));
  auto n = unique_name("restart");
  auto l = c.make_lock(n, {.lease = 1500ms});
  std::atomic<bool> told{false};
  l.on_lost([&](const std::string&) { told = true; });
  ASSERT_TRUE(l.try_lock());
  auto renewals_before = c.stats().renewals;
  // Crash one node and bring it back empty (no persistence): it forgot the hold.
  m.servers[4]->stop();
  m.servers[4]->start();
  {
    raw_redis r(m.servers[4]->port());
    EXPECT_EQ(r.cmd({"EXISTS", redis::owner_key("sqlock", n)}), "0");
  }
  // Several leases long: the other four keep the majority through the renewals.
  auto until = std::chrono::steady_clock::now() + 4s;
  while (std::chrono::steady_clock::now() < until) {
    EXPECT_FALSE(other.make_lock(n).try_lock());
    std::this_thread::sleep_for(250ms);
  }
  EXPECT_FALSE(told);
  EXPECT_FALSE(l.lost());
  EXPECT_TRUE(l.renew());
  EXPECT_GT(c.stats().renewals, renewals_before);
  auto fence = l.fence();
  l.unlock();
  EXPECT_TRUE(l.last_error().empty()) << l.last_error();
  auto lo = other.make_lock(n);
  ASSERT_TRUE(lo.try_lock());
  EXPECT_GT(lo.fence(), fence);
  lo.unlock();
}

TEST_F(redlock_own, a_majority_lost_during_a_hold_is_reported) {
  own_masters m(3, tmp_.path);
  auto c = connect(m.url("?timeout=500ms&connect_timeout=500ms"));
  auto n = unique_name("majority-lost");
  auto l = c.make_lock(n, {.lease = 1500ms});
  std::atomic<bool> told{false};
  l.on_lost([&](const std::string&) { told = true; });
  ASSERT_TRUE(l.try_lock());
  m.servers[0]->stop();
  m.servers[1]->stop();
  auto until = std::chrono::steady_clock::now() + 30s;  // liveness bound only
  while (!told && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(told);
  EXPECT_TRUE(l.lost());
  l.unlock();
}

}  // namespace sqlock::test
