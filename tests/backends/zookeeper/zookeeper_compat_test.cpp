// compat=kazoo and compat=curator / curator-rw on the real server. kazoo (python3-kazoo, driven
// by kazoo_peer.py): Lock, ReadLock and WriteLock both directions, sqlock's node named as
// kazoo's, list() showing kazoo's hold, and one queue mixing sqlock and kazoo waiters served in
// arrival order. Curator runs only on the JVM: its nodes are made by hand with the names its
// protected create gives them (CreateBuilderImpl/ProtectedUtils: "_c_" + UUID + "-" + lock name;
// InterProcessMutex: "lock-"; InterProcessReadWriteLock.java: "__READ__" / "__WRIT__"), and
// sqlock must queue behind them by LockInternals.java / StandardLockInternalsDriver.java's rules
// (the rules themselves are checked by vectors in zk_layout_vectors_test.cpp).
#include <future>
#include <regex>
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

class zk_compat : public ::testing::Test {
 protected:
  void SetUp() override {
    SQLOCK_REQUIRE_URL("SQLOCK_TEST_ZOOKEEPER_URL", base_);
    auto u = url::parse(base_);
    for (const auto& h : u.hosts)
      hosts_ += (hosts_.empty() ? "" : ",") + h.host + ":" + std::to_string(h.port ? h.port : 2181);
    root_ = u.path;  // "/sqlock-test"
    name_ = unique_name("compat");
  }
  // A kazoo lock of `kind` (lock, read, write) on this test's lock.
  std::unique_ptr<peer_process> kazoo(const std::string& kind) {
    auto p = std::make_unique<peer_process>(
        std::vector<std::string>{"/usr/bin/python3", SQLOCK_TEST_SOURCE_DIR "/kazoo_peer.py",
                                 hosts_, root_ + "/" + name_, kind});
    EXPECT_EQ(p->line(30s).value_or(""), "ready");
    return p;
  }
  std::string url(const std::string& compat) const { return base_ + "?compat=" + compat; }
  lock_request req(lock_kind kind) const { return {name_, random_token(), 30s, "test", kind, 0}; }

  std::string base_, hosts_, root_, name_;
};

TEST_F(zk_compat, an_unknown_layout_is_a_config_error_naming_the_valid_ones) {
  try {
    connect(url("zkfarm"));
    FAIL() << "accepted";
  } catch (const config_error& e) {
    const std::string w = e.what();
    for (auto v : {"kazoo", "curator", "curator-rw"}) EXPECT_NE(w.find(v), std::string::npos) << w;
  }
}

TEST_F(zk_compat, kazoo_lock_holds_sqlock_waits_then_sqlock_holds_kazoo_is_refused) {
  auto peer = kazoo("lock");
  ASSERT_EQ(peer->ask("try"), "yes");
  auto c = connect(url("kazoo"));
  auto m = c.make_lock(name_);
  EXPECT_FALSE(m.try_lock());
  auto rows = c.list(name_);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].name, name_);
  EXPECT_EQ(rows[0].mode, "kazoo");
  EXPECT_EQ(rows[0].holder, "kazoo-peer");  // kazoo's identifier, the node's data
  std::promise<void> got, done_with_it;
  auto waiter = std::async(std::launch::async, [&, done = done_with_it.get_future()] {
    if (!m.try_lock_for(15s)) return false;
    got.set_value();
    done.wait();
    m.unlock();
    return true;
  });
  EXPECT_EQ(waiter.wait_for(300ms), std::future_status::timeout);  // behind kazoo's node
  EXPECT_EQ(peer->ask("release"), "released");
  auto held = got.get_future();
  ASSERT_EQ(held.wait_for(15s), std::future_status::ready);
  // sqlock's node is named as kazoo names its own: <32 hex digits>__lock__<10 digits>.
  const auto kids = peer->ask("children");
  EXPECT_TRUE(std::regex_match(kids, std::regex("[0-9a-f]{32}__lock__[0-9]{10}"))) << kids;
  EXPECT_EQ(peer->ask("try"), "no");
  done_with_it.set_value();
  ASSERT_TRUE(waiter.get());
  EXPECT_EQ(peer->ask("try"), "yes");
  EXPECT_FALSE(m.try_lock());
  EXPECT_EQ(peer->ask("release"), "released");
}

TEST_F(zk_compat, kazoo_readers_and_writers_against_sqlock_shared_and_exclusive) {
  auto reader = kazoo("read");
  auto writer = kazoo("write");
  auto c = connect(url("kazoo"));
  auto& b = c.get_backend();
  ASSERT_TRUE(b.caps().shared);
  // kazoo's reader holds: a sqlock reader joins it, a sqlock writer is refused.
  ASSERT_EQ(reader->ask("try"), "yes");
  auto r = b.try_acquire(req(lock_kind::shared), soon());
  ASSERT_TRUE(r);
  EXPECT_FALSE(b.try_acquire(req(lock_kind::exclusive), soon()));
  // sqlock's reader holds (kazoo's released): kazoo's writer is refused, its reader admitted.
  EXPECT_EQ(reader->ask("release"), "released");
  EXPECT_EQ(writer->ask("try"), "no");
  EXPECT_EQ(reader->ask("try"), "yes");
  EXPECT_EQ(reader->ask("release"), "released");
  EXPECT_TRUE(b.release(*r, soon()));
  // kazoo's writer holds: sqlock's reader and writer are refused.
  ASSERT_EQ(writer->ask("try"), "yes");
  EXPECT_FALSE(b.try_acquire(req(lock_kind::shared), soon()));
  EXPECT_FALSE(b.try_acquire(req(lock_kind::exclusive), soon()));
  EXPECT_EQ(writer->ask("release"), "released");
  // sqlock's writer holds: kazoo's reader and writer are refused; after it, both get in.
  auto w = b.try_acquire(req(lock_kind::exclusive), soon());
  ASSERT_TRUE(w);
  EXPECT_EQ(reader->ask("try"), "no");
  EXPECT_EQ(writer->ask("try"), "no");
  EXPECT_TRUE(b.release(*w, soon()));
  EXPECT_EQ(reader->ask("try"), "yes");
  EXPECT_EQ(reader->ask("release"), "released");
  EXPECT_EQ(writer->ask("try"), "yes");
  EXPECT_EQ(writer->ask("release"), "released");
}

TEST_F(zk_compat, one_queue_of_sqlock_and_kazoo_waiters_is_served_in_arrival_order) {
  auto c = connect(url("kazoo"));
  auto first = c.make_lock(name_);
  ASSERT_TRUE(first.try_lock());
  auto k1 = kazoo("lock");
  ASSERT_EQ(k1->ask("start"), "queued");  // second in line
  auto c2 = connect(url("kazoo"));
  auto third = c2.make_lock(name_);
  std::promise<void> got, done_with_it;
  auto waiter = std::async(std::launch::async, [&, done = done_with_it.get_future()] {
    if (!third.try_lock_for(20s)) return false;
    got.set_value();
    done.wait();
    third.unlock();
    return true;
  });
  // Third in line once its node is there (three children: first, k1, third).
  auto count = [&] {
    auto kids = k1->ask("children");
    return kids.empty() ? 0 : 1 + std::count(kids.begin(), kids.end(), ',');
  };
  for (int i = 0; i < 500 && count() < 3; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(count(), 3);
  auto k2 = kazoo("lock");
  ASSERT_EQ(k2->ask("start"), "queued");  // fourth
  auto third_held = got.get_future();

  first.unlock();
  EXPECT_EQ(k1->line(15s).value_or(""), "held");
  EXPECT_EQ(third_held.wait_for(200ms), std::future_status::timeout);
  EXPECT_EQ(k1->ask("release"), "released");
  ASSERT_EQ(third_held.wait_for(15s), std::future_status::ready);
  EXPECT_EQ(k2->line(200ms), std::nullopt);  // still behind sqlock's waiter
  done_with_it.set_value();
  ASSERT_TRUE(waiter.get());
  EXPECT_EQ(k2->line(15s).value_or(""), "held");
  EXPECT_EQ(k2->ask("release"), "released");
}

// A Curator InterProcessMutex node ("_c_<uuid>-lock-<seq>") holds: sqlock waits behind it and
// names its own node as Curator would.
TEST_F(zk_compat, curator_mutex_nodes_queue_with_sqlock) {
  auto raw = kazoo("lock");  // used only for make/drop/children
  const auto theirs = raw->ask("make _c_1b4e28ba-2fa1-11d2-883f-0016d3cca427-lock-");
  ASSERT_TRUE(std::regex_match(theirs, std::regex("_c_.*-lock-[0-9]{10}"))) << theirs;
  auto c = connect(url("curator"));
  EXPECT_FALSE(c.get_backend().caps().shared);
  auto m = c.make_lock(name_);
  EXPECT_FALSE(m.try_lock());
  EXPECT_EQ(c.list(name_).size(), 1u);  // Curator's hold, listed
  auto waiter = std::async(std::launch::async, [&] {
    bool ok = m.try_lock_for(15s);
    if (ok) m.unlock();
    return ok;
  });
  for (int i = 0; i < 500 && raw->ask("children").find(',') == std::string::npos; ++i)
    std::this_thread::sleep_for(10ms);
  const auto kids = raw->ask("children");
  EXPECT_TRUE(std::regex_search(
      kids, std::regex("_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-"
                       "[0-9]{10}")))
      << kids;
  EXPECT_EQ(waiter.wait_for(200ms), std::future_status::timeout);
  EXPECT_EQ(raw->ask("drop " + theirs), "dropped");
  EXPECT_TRUE(waiter.get());
}

// InterProcessReadWriteLock nodes: a Curator reader admits a sqlock reader; a Curator writer
// queued behind it keeps later readers out (a reader holds only with no writer ahead).
TEST_F(zk_compat, curator_read_write_nodes_queue_with_sqlock) {
  auto raw = kazoo("lock");
  const auto reader = raw->ask("make _c_0f8fad5b-d9cb-469f-a165-70867728950e-__READ__");
  auto c = connect(url("curator-rw"));
  auto& b = c.get_backend();
  auto r = b.try_acquire(req(lock_kind::shared), soon());
  ASSERT_TRUE(r);
  EXPECT_FALSE(b.try_acquire(req(lock_kind::exclusive), soon()));
  const auto writer = raw->ask("make _c_7c9e6679-7425-40de-944b-e07fc1f90ae7-__WRIT__");
  EXPECT_FALSE(b.try_acquire(req(lock_kind::shared), soon()));
  const auto kids = raw->ask("children");
  EXPECT_TRUE(std::regex_search(kids, std::regex("_c_[0-9a-f-]{36}-__READ__[0-9]{10}"))) << kids;
  EXPECT_TRUE(b.release(*r, soon()));
  EXPECT_EQ(raw->ask("drop " + reader), "dropped");
  EXPECT_FALSE(b.try_acquire(req(lock_kind::shared), soon()));  // the writer holds
  EXPECT_EQ(raw->ask("drop " + writer), "dropped");
  auto w = b.try_acquire(req(lock_kind::exclusive), soon());
  ASSERT_TRUE(w);
  EXPECT_TRUE(b.release(*w, soon()));
}

}  // namespace
}  // namespace sqlock::test
