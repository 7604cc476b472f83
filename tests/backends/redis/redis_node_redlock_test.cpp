// compat=plain on Redlock against node-redlock (redlock 4 from npm over ioredis, installed by
// the ctest fixture redis.node_redlock_install): over the same five masters, both directions —
// node-redlock holds -> sqlock is refused, then waits until it releases; sqlock holds ->
// node-redlock is refused, then gets it after the release — and the hold's value is the token
// list() shows.
#include <filesystem>
#include <future>
#include <thread>

#include "peer_process.hpp"
#include "sqlock/client.hpp"
#include "sqlock/url.hpp"
#include "test_env.hpp"

namespace sqlock::test {
namespace {

using namespace std::chrono_literals;

class node_redlock : public ::testing::Test {
 protected:
  void SetUp() override {
    SQLOCK_REQUIRE_URL("SQLOCK_TEST_REDLOCK_URL", url_);
    const std::string dir = SQLOCK_TEST_NODE_REDLOCK_DIR;
    if (!std::filesystem::exists(dir + "/node_modules/redlock")) {
      if (require_all()) FAIL() << "node-redlock is not installed in " << dir;
      GTEST_SKIP() << "node-redlock is not installed (ctest runs redis.node_redlock_install)";
    }
    std::string servers;
    for (const auto& h : url::parse(url_).hosts)
      servers += (servers.empty() ? "" : ",") + h.host + ":" + std::to_string(h.port);
    name_ = unique_name("node-redlock");
    peer_ = std::make_unique<peer_process>(
        std::vector<std::string>{"/usr/bin/env", "node", dir + "/redlock_peer.js", servers, name_});
    ASSERT_EQ(peer_->line(20s).value_or(""), "ready");
    url_ += "?compat=plain";
  }
  std::string url_, name_;
  std::unique_ptr<peer_process> peer_;
};

TEST_F(node_redlock, the_peer_holds_sqlock_is_refused_then_waits) {
  ASSERT_EQ(peer_->ask("try"), "yes");
  const auto token = peer_->ask("token");
  auto c = connect(url_);
  auto m = c.make_lock(name_);
  EXPECT_FALSE(m.try_lock());
  auto rows = c.list(name_);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].owner, token);
  auto waiter = std::async(std::launch::async, [&] {
    bool got = m.try_lock_for(15s);
    if (got) m.unlock();
    return got;
  });
  EXPECT_EQ(waiter.wait_for(300ms), std::future_status::timeout);
  EXPECT_EQ(peer_->ask("release"), "released");
  EXPECT_TRUE(waiter.get());
}

TEST_F(node_redlock, sqlock_holds_the_peer_is_refused_then_gets_it) {
  auto c = connect(url_);
  auto m = c.make_lock(name_, {.lease = 600ms});
  ASSERT_TRUE(m.try_lock());
  EXPECT_EQ(peer_->ask("try"), "no");
  std::this_thread::sleep_for(900ms);  // renewed past the first lease
  EXPECT_EQ(peer_->ask("try"), "no");
  m.unlock();
  EXPECT_EQ(peer_->ask("try"), "yes");
  EXPECT_FALSE(m.try_lock());
  EXPECT_EQ(peer_->ask("release"), "released");
}

}  // namespace
}  // namespace sqlock::test
