// compat=plain against the real peer: redis-py's Lock (redispy_peer.py) on the same key, both
// directions (the peer holds -> sqlock is refused and waits; sqlock holds -> the peer's
// acquire(blocking=False) fails; after a release the other way round), the layout on the
// server (the key is the name, its value the token), list() showing the peer's hold, no fence,
// an unknown compat= value refused, and Redlock over the five masters in the same layout.
#include <atomic>
#include <future>
#include <string>
#include <thread>

#include "peer_process.hpp"
#include "sqlock/client.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/url.hpp"
#include "test_env.hpp"

namespace sqlock::test {
namespace {

using namespace std::chrono_literals;

// A redis-py Lock on `name` at the first server of `u`.
std::unique_ptr<peer_process> redispy(const std::string& u, const std::string& name) {
  const auto h = url::parse(u).hosts.at(0);
  auto p = std::make_unique<peer_process>(std::vector<std::string>{
      "/usr/bin/python3", SQLOCK_TEST_SOURCE_DIR "/redispy_peer.py",
      h.host.empty() ? "127.0.0.1" : h.host, std::to_string(h.port ? h.port : 6379), name});
  EXPECT_EQ(p->line(20s).value_or(""), "ready");
  return p;
}

class redis_plain : public ::testing::Test {
 protected:
  void SetUp() override {
    SQLOCK_REQUIRE_URL("SQLOCK_TEST_REDIS_URL", url_);
    url_ += "?compat=plain";
  }
  std::string url_;
};

TEST_F(redis_plain, an_unknown_layout_is_a_config_error_naming_the_valid_ones) {
  try {
    connect(env("SQLOCK_TEST_REDIS_URL") + "?compat=redsync");
    FAIL() << "accepted";
  } catch (const config_error& e) {
    EXPECT_NE(std::string(e.what()).find("plain"), std::string::npos) << e.what();
  }
}

TEST_F(redis_plain, the_peer_holds_sqlock_is_refused_then_waits_until_the_peer_releases) {
  const auto n = unique_name("plain");
  auto peer = redispy(url_, n);
  ASSERT_EQ(peer->ask("try"), "yes");
  const auto token = peer->ask("token");
  auto c = connect(url_);
  auto m = c.make_lock(n);
  EXPECT_FALSE(m.try_lock());
  // list() shows the peer's hold: the key is the name, the owner the peer's token.
  auto rows = c.list(n);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].name, n);
  EXPECT_EQ(rows[0].owner, token);
  EXPECT_FALSE(rows[0].expires_at.empty());
  // The hold is the waiting thread's (a mutex is held per thread): it unlocks when told.
  std::promise<void> got, done_with_it;
  auto waiter = std::async(std::launch::async, [&, done = done_with_it.get_future()] {
    if (!m.try_lock_for(15s)) return false;
    EXPECT_THROW(m.fence(), unsupported);  // the layout has no fence
    got.set_value();
    done.wait();
    m.unlock();
    return true;
  });
  EXPECT_EQ(waiter.wait_for(300ms), std::future_status::timeout);  // still the peer's
  EXPECT_EQ(peer->ask("release"), "released");
  auto held = got.get_future();
  ASSERT_EQ(held.wait_for(15s), std::future_status::ready);
  EXPECT_EQ(peer->ask("try"), "no");
  done_with_it.set_value();
  ASSERT_TRUE(waiter.get());
  EXPECT_FALSE(c.get_backend().caps().fencing);
  EXPECT_EQ(peer->ask("try"), "yes");
  EXPECT_EQ(peer->ask("release"), "released");
}

TEST_F(redis_plain, sqlock_holds_the_peer_fails_and_gets_it_after_the_release) {
  const auto n = unique_name("plain");
  auto peer = redispy(url_, n);
  auto c = connect(url_);
  // A short lease renewed in the background: the peer stays out past the first lease.
  auto m = c.make_lock(n, {.lease = 600ms});
  ASSERT_TRUE(m.try_lock());
  EXPECT_EQ(peer->ask("try"), "no");
  std::this_thread::sleep_for(900ms);
  EXPECT_EQ(peer->ask("try"), "no");
  auto rows = c.list(n);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].mode, "plain");
  m.unlock();
  EXPECT_EQ(peer->ask("try"), "yes");
  EXPECT_FALSE(m.try_lock());
  EXPECT_EQ(peer->ask("release"), "released");
  EXPECT_TRUE(m.try_lock());
  m.unlock();
}

TEST_F(redis_plain, redlock_takes_the_same_key_on_the_masters) {
  std::string rl;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_REDLOCK_URL", rl);
  rl += "?compat=plain";
  const auto n = unique_name("plain-rl");
  auto c = connect(rl);
  EXPECT_EQ(c.get_backend().mode(), "redlock-plain");
  auto m = c.make_lock(n, {.lease = 600ms});
  ASSERT_TRUE(m.try_lock());
  // Every master has the key in the peers' layout: redis-py on any of them is refused.
  auto first = redispy(rl, n);
  EXPECT_EQ(first->ask("try"), "no");
  std::this_thread::sleep_for(900ms);  // renewed past the first lease
  EXPECT_EQ(first->ask("try"), "no");
  EXPECT_EQ(c.list(n).size(), 1u);
  m.unlock();
  EXPECT_EQ(first->ask("try"), "yes");
  // One master held by the peer does not keep a majority from sqlock.
  EXPECT_TRUE(m.try_lock());
  m.unlock();
  EXPECT_EQ(first->ask("release"), "released");
}

}  // namespace
}  // namespace sqlock::test
