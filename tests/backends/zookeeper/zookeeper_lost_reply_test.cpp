// A ZooKeeper create whose reply alone is lost (issue 16): a proxy forwards the create to the
// shared server and drops the answer; once the connection is reset, the client reconnects on the
// same session, finds the node its create made by the owner token in the node's name, and holds
// with it. One node, counted in lost_replies_found; none left after the release.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "sqlock/client.hpp"
#include "sqlock/url.hpp"
#include "sqlock/zookeeper/zookeeper.hpp"
#include "tcp_proxy.hpp"
#include "test_env.hpp"
#include "zk_raw.hpp"
#include "zk_test_support.hpp"

using namespace sqlock;
using namespace std::chrono_literals;

namespace {

// A timed wait sends the create with its first listing. (try_lock reads the queue first: the
// answer lost there is a read's, and the call ends as connection_error without a node.)
TEST(zk_lost_reply, a_waiting_create_whose_reply_is_lost_is_found_by_its_owner_token) {
  std::string url;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_ZOOKEEPER_URL", url);
  const auto host = url::parse(url).hosts.at(0);
  const int port = host.port ? host.port : 2181;
  test::tcp_proxy proxy(host.host, port);
  auto c = connect(test::with_host_port(url, host.host, port, proxy.port()));
  test::raw_zk raw(url);
  auto n = test::unique_name("lost-create-reply");
  auto l = c.make_lock(n, {.lease = 30s});
  // A first hold makes the session and the name's parent: the lost create below is the node's.
  ASSERT_TRUE(l.try_lock());
  l.unlock();
  ASSERT_EQ(raw.queue_length(n), 0);

  // The lock is taken by this thread (a hold belongs to its thread); another watches the server
  // and resets the connection once the create has reached it (its node is there) while its
  // answer was dropped.
  std::atomic<bool> created{false};
  proxy.drop_replies(true);
  std::thread resetter([&] {
    created = test::eventually([&] { return raw.queue_length(n) == 1; }, 10s);
    proxy.end_drop_with_reset();
  });
  bool got = false;
  std::string error;
  try {
    got = l.try_lock_for(20s);
  } catch (const std::exception& ex) {
    error = ex.what();
  }
  resetter.join();
  EXPECT_EQ(error, "");
  ASSERT_TRUE(created) << "the create never reached the server";
  EXPECT_TRUE(got) << "the lock was not taken with the node the lost create made";
  EXPECT_EQ(zookeeper::stats(c.get_backend()).lost_replies_found, 1u);
  EXPECT_EQ(raw.queue_length(n), 1) << "the create was made twice";
  l.unlock();
  EXPECT_TRUE(raw.no_orphans({n}));
}

}  // namespace
