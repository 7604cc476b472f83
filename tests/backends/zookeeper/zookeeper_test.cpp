// What only the ZooKeeper backend has: a FIFO queue where each release wakes exactly one waiter,
// holds bound to the session (expiry, killed holder), an ensemble member stopped under load,
// idempotent acquisition per owner token, name encoding, digest ACLs, and no orphan znodes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <thread>
#include <vector>

#include "acquire_loop.hpp"
#include "async_release_checks.hpp"
#include "sqlock/client.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/url.hpp"
#include "sqlock/zookeeper/zookeeper.hpp"
#include "test_env.hpp"
#include "zk_raw.hpp"
#include "zk_test_support.hpp"

using namespace sqlock;
using namespace std::chrono_literals;
using sqlock::test::eventually;
using sqlock::test::raw_zk;
using sqlock::test::unique_name;

namespace {

using clock_type = std::chrono::steady_clock;

// Serializes the tests that stop ensemble members (ctest runs test cases in parallel).
class ensemble_guard {
 public:
  explicit ensemble_guard(const std::string& ctl) {
    fd_ = ::open((ctl + ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~ensemble_guard() {
    if (fd_ >= 0) ::close(fd_);
  }
  ensemble_guard(const ensemble_guard&) = delete;
  ensemble_guard& operator=(const ensemble_guard&) = delete;

 private:
  int fd_ = -1;
};

class zk : public ::testing::Test {
 protected:
  void SetUp() override {
    SQLOCK_REQUIRE_URL("SQLOCK_TEST_ZOOKEEPER_URL", url_);
    register_builtin_backends();
  }
  std::string url_;
};

}  // namespace

// ---- without a server ----

TEST(zookeeper_names, encoding_round_trips_and_is_a_valid_znode_name) {
  const std::vector<std::string> names = {"a",         "orders:42",
                                          "a/b/c",     "/",
                                          ".",         "..",
                                          "...",       "zookeeper",
                                          "100%",      "%41",
                                          "ключ-🔒-鍵", std::string("nul\0byte", 8),
                                          "new\nline", std::string(1024, 'x') + "/y",
                                          "space here"};
  for (const auto& n : names) {
    auto z = zookeeper::znode_name(n);
    EXPECT_EQ(z.find('/'), std::string::npos) << n;
    EXPECT_NE(z, ".");
    EXPECT_NE(z, "..");
    for (unsigned char c : z) EXPECT_TRUE(c > 0x20 && c < 0x7f) << n;
    auto back = zookeeper::lock_name(z);
    ASSERT_TRUE(back) << n;
    EXPECT_EQ(*back, n);
  }
  EXPECT_NE(zookeeper::znode_name("Case"), zookeeper::znode_name("case"));
  EXPECT_FALSE(zookeeper::lock_name("bad/slash"));
  EXPECT_FALSE(zookeeper::lock_name("%4"));
  EXPECT_FALSE(zookeeper::lock_name("%41"));  // not canonical: 'A' is never escaped
  EXPECT_FALSE(zookeeper::lock_name(""));
}

TEST(zookeeper_url, bad_options_are_config_errors) {
  register_builtin_backends();
  EXPECT_THROW(make_backend("zookeeper:///sqlock"), config_error);
  EXPECT_THROW(make_backend("zookeeper://127.0.0.1:1/x?acl=everyone"), config_error);
  EXPECT_THROW(make_backend("zookeeper://127.0.0.1:1/x?session_timeout=soon"), config_error);
  EXPECT_THROW(make_backend("zookeeper://127.0.0.1:1/x?session_timeout=0"), config_error);
  EXPECT_THROW(make_backend("zookeeper://127.0.0.1:1/x?connect_timeout=0"), config_error);
  EXPECT_THROW(make_backend("zookeeper://127.0.0.1:1/x?timeout=0"), config_error);
  EXPECT_THROW(make_backend("zookeeper://127.0.0.1:1/x?acl=creator"), config_error);
  EXPECT_THROW(make_backend("zookeeper://127.0.0.1:1/zookeeper"), config_error);
  EXPECT_THROW(make_backend("zookeeper://127.0.0.1:1/a//b"), config_error);
  EXPECT_THROW(make_backend("zookeeper://127.0.0.1:1/x?bogus=1"), config_error);
  EXPECT_THROW(make_backend("zookeeper://127.0.0.1:1/x?release=later"), config_error);
  EXPECT_NO_THROW(make_backend("zookeeper://127.0.0.1:1/x?release=wait"));
  EXPECT_NO_THROW(make_backend("zookeeper://127.0.0.1:1/x?release=async"));
}

TEST(zookeeper_url, no_server_is_a_connection_error_by_the_deadline) {
  register_builtin_backends();
  // Making the backend does not wait for a session; the first call waits within its deadline.
  auto b = make_backend("zookeeper://127.0.0.1:1/x");
  lock_request req{unique_name("noserver"), random_token(), 30s, "test"};
  auto start = clock_type::now();
  EXPECT_THROW(b->try_acquire(req, start + 500ms), connection_error);
  EXPECT_LT(clock_type::now() - start, 500ms + 2s);  // by the deadline, with a generous slack
  start = clock_type::now();
  EXPECT_THROW(sqlock::acquire(*b, req, start + 1s, {}), connection_error);
  EXPECT_LT(clock_type::now() - start, 1s + 2s);
}

TEST(zookeeper_url, passwords_never_appear_in_errors_or_describe) {
  register_builtin_backends();
  const std::string secret = "S3cr3t-pw";
  for (const std::string& url : {
           "zookeeper://u:" + secret + "@127.0.0.1:1/x?session_timeout=soon",
           "zookeeper://u:" + secret + "@127.0.0.1:1/x?session_timeout=0",
           "zookeeper://u:" + secret + "@127.0.0.1:1/x?timeout=0",
           "zookeeper://u:" + secret + "@127.0.0.1:1/x?bogus=1",
           "zookeeper://u:" + secret + "@127.0.0.1:1/x?acl=everyone",
           "zookeeper://u:" + secret + "%zz@127.0.0.1:1/x",       // bad percent-escape
           "zookeeper://u:" + secret + "@127.0.0.1:99999/x",      // bad port
           "zookeeper://u:" + secret + "@[::1/x",                 // bad host
           "zookeeper://u:" + secret + "@127.0.0.1:1/zookeeper",  // bad root
       }) {
    try {
      make_backend(url);
      ADD_FAILURE() << "accepted a bad URL";
    } catch (const config_error& e) {
      EXPECT_EQ(std::string(e.what()).find(secret), std::string::npos) << e.what();
    }
  }
  auto b = make_backend("zookeeper://u:" + secret + "@127.0.0.1:1/x");
  EXPECT_EQ(b->describe().find(secret), std::string::npos) << b->describe();
  lock_request req{unique_name("pw"), random_token(), 30s, "test"};
  try {
    b->try_acquire(req, clock_type::now() + 300ms);
    ADD_FAILURE() << "no server, yet acquired";
  } catch (const connection_error& e) {
    EXPECT_EQ(std::string(e.what()).find(secret), std::string::npos) << e.what();
  }
}

TEST(zookeeper_url, invalid_or_over_long_names_are_config_errors_before_sending) {
  register_builtin_backends();
  auto b = make_backend("zookeeper://127.0.0.1:1/x");  // no server: nothing may be sent
  auto bad = [&](const std::string& name) {
    lock_request req{name, random_token(), 30s, "test"};
    auto start = clock_type::now();
    EXPECT_THROW(b->try_acquire(req, start + 5s), config_error);
    EXPECT_THROW(sqlock::acquire(*b, req, start + 5s, {}), config_error);
    EXPECT_LT(clock_type::now() - start, 1s);  // refused at once, not after a wait
  };
  bad("");
  bad("bad \xff byte");
  bad("overlong \xc0\xaf slash");
  bad("surrogate \xed\xa0\x80");
  bad(std::string(4097, 'x'));
  EXPECT_THROW(b->admin()->force_release(std::string("\xfe")), config_error);
}

// ---- on the standalone server ----

TEST_F(zk, caps_describe_and_session) {
  auto c = connect(url_);
  auto caps = c.caps();
  EXPECT_TRUE(caps.fair);
  EXPECT_TRUE(caps.notify);
  EXPECT_TRUE(caps.session_bound);
  EXPECT_TRUE(caps.fencing);
  EXPECT_EQ(c.get_backend().kind(), "zookeeper");
  auto cred = zookeeper::current_session(c.get_backend());  // waits for the session
  EXPECT_NE(cred.id, 0);
  EXPECT_EQ(cred.password.size(), 16u);
  EXPECT_GT(cred.timeout_ms, 0);
  EXPECT_EQ(zookeeper::stats(c.get_backend()).sessions, 1u);
  auto mem = connect("memory:zk-not");
  EXPECT_THROW(zookeeper::stats(mem.get_backend()), usage_error);
}

TEST_F(zk, acquire_is_idempotent_per_owner_token) {
  auto b = make_backend(url_);
  raw_zk raw(url_);
  auto n = unique_name("idem");
  lock_request req{n, random_token(), 30s, "test"};
  auto first = b->try_acquire(req, sqlock::test::soon());
  ASSERT_TRUE(first);
  auto again = b->try_acquire(req, sqlock::test::soon());  // a retry after a lost reply
  ASSERT_TRUE(again);
  EXPECT_EQ(again->fence, first->fence);
  auto waited = sqlock::acquire(*b, req, clock_type::now() + 1s, {});
  ASSERT_TRUE(waited);
  EXPECT_EQ(waited->fence, first->fence);
  EXPECT_EQ(raw.queue_length(n), 1);
  EXPECT_EQ(zookeeper::stats(*b).nodes_created, 1u);
  EXPECT_TRUE(b->release(*first, sqlock::test::soon()));
  EXPECT_FALSE(b->release(*first, sqlock::test::soon()));
  EXPECT_TRUE(raw.no_orphans({n}));
}

// release=async: unlock() returns once the delete is sent, and the same client's
// next acquire of the name, sent after it on the same session, never finds its own release still
// ahead of it: try_lock() right after unlock() gets the lock, and lock() does not wait. Many
// names in a row, as a client that locks one name after another does.
TEST_F(zk, async_release_then_reacquire_by_the_same_client_is_never_behind_it) {
  auto a = connect(sqlock::test::url_with(url_, "release=async"));
  raw_zk raw(url_);
  std::vector<std::string> names;
  for (int i = 0; i < 60; ++i) names.push_back(unique_name("in-a-row"));
  sqlock::test::expect_reacquire_never_behind_own_release(a, names);
  // Every release lands on the server.
  EXPECT_TRUE(eventually([&]() -> bool { return raw.no_orphans(names); }, 10s));
}

// release=wait (the default, said explicitly here): unlock() returns once the server deleted
// the node, so another client's try_lock() right after it gets the lock.
TEST_F(zk, release_wait_frees_the_lock_for_others_before_unlock_returns) {
  auto a = connect(sqlock::test::url_with(url_, "release=wait"));
  auto b = connect(sqlock::test::url_with(url_, "release=async"));
  raw_zk raw(url_);
  auto n = unique_name("release-wait");
  auto la = a.make_lock(n);
  auto lb = b.make_lock(n);
  for (int i = 0; i < 10; ++i) {
    la.lock();
    la.unlock();
    EXPECT_EQ(raw.queue_length(n), 0);
    ASSERT_TRUE(lb.try_lock());
    lb.unlock();
  }
}

TEST_F(zk, busy_try_and_timed_out_waits_leave_no_node) {
  auto a = connect(url_);
  auto b = connect(url_);
  raw_zk raw(url_);
  auto n = unique_name("noorphan");
  auto la = a.make_lock(n);
  la.lock();
  auto lb = b.make_lock(n);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(lb.try_lock());
  EXPECT_EQ(raw.queue_length(n), 1);
  EXPECT_FALSE(lb.try_lock_for(300ms));
  EXPECT_EQ(raw.queue_length(n), 1);  // the waiter left the queue at its deadline
  la.unlock();
  EXPECT_TRUE(lb.try_lock());
  lb.unlock();
  EXPECT_EQ(raw.queue_length(n), 0);
  // The per-lock parent is a container node: the server removes it once empty.
  EXPECT_TRUE(eventually([&] { return raw.queue_length(n) == -1; }, 20s))
      << "empty container parent was not removed";
}

TEST_F(zk, hundred_waiters_are_served_in_order_and_each_release_wakes_exactly_one) {
  constexpr int sessions = 4, waiters = 100;
  std::vector<std::shared_ptr<backend>> bs;
  for (int i = 0; i < sessions; ++i) bs.push_back(make_backend(url_));
  auto holder_backend = make_backend(url_);
  raw_zk raw(url_);
  auto n = unique_name("herd");
  lock_request hreq{n, random_token(), 30s, "holder"};
  auto held = holder_backend->try_acquire(hreq, sqlock::test::soon());
  ASSERT_TRUE(held);

  std::mutex m;
  std::vector<std::uint64_t> fences;  // in acquisition order
  std::atomic<int> inside{0}, max_inside{0}, failures{0};
  std::vector<std::jthread> ts;
  for (int i = 0; i < waiters; ++i) {
    ts.emplace_back([&, i] {
      auto& b = *bs[static_cast<std::size_t>(i % sessions)];
      lock_request req{n, random_token(), 30s, "waiter " + std::to_string(i)};
      try {
        auto got = sqlock::acquire(b, req, clock_type::now() + 120s, {});
        if (!got) {
          ++failures;
          return;
        }
        int now_inside = ++inside;
        int mx = max_inside.load();
        while (now_inside > mx && !max_inside.compare_exchange_weak(mx, now_inside)) {
        }
        {
          std::lock_guard g(m);
          fences.push_back(got->fence);
        }
        --inside;
        if (!b.release(*got, sqlock::test::soon())) ++failures;
      } catch (const std::exception&) {
        ++failures;
      }
    });
  }
  auto waiting = [&] {
    std::uint64_t w = 0;
    for (auto& b : bs) w += zookeeper::stats(*b).waiting;
    return w;
  };
  ASSERT_TRUE(eventually([&] { return waiting() == waiters; }, 60s))
      << "only " << waiting() << " waiters queued";
  EXPECT_EQ(raw.queue_length(n), waiters + 1);
  std::uint64_t events_before = 0;
  for (auto& b : bs) events_before += zookeeper::stats(*b).watch_events;
  EXPECT_EQ(events_before, 0u);  // nobody was woken while the holder held

  ASSERT_TRUE(holder_backend->release(*held, sqlock::test::soon()));
  for (auto& t : ts) t.join();

  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(max_inside.load(), 1);
  ASSERT_EQ(fences.size(), static_cast<std::size_t>(waiters));
  // FIFO: holds were granted in node-creation order, so the fences (czxids) rise.
  for (std::size_t i = 1; i < fences.size(); ++i) EXPECT_LT(fences[i - 1], fences[i]) << i;
  EXPECT_GT(fences.front(), held->fence);
  // No herd: each of the 100 releases (holder + 99 waiters) woke exactly one watcher, and no
  // waiter was woken only to wait again.
  std::uint64_t events = 0, woken_not_first = 0;
  for (auto& b : bs) {
    auto st = zookeeper::stats(*b);
    events += st.watch_events;
    woken_not_first += st.woken_not_first;
  }
  EXPECT_EQ(events, static_cast<std::uint64_t>(waiters));
  EXPECT_EQ(woken_not_first, 0u);
  EXPECT_TRUE(raw.no_orphans({n}));
}

TEST_F(zk, expired_session_reports_loss_and_next_waiter_acquires) {
  auto a = connect(url_);
  auto b = connect(url_);
  raw_zk raw(url_);
  auto n = unique_name("expire");
  auto la = a.make_lock(n, {.lease = 3s});
  std::atomic<int> lost_calls{0};
  la.on_lost([&](const std::string&) { ++lost_calls; });
  la.lock();
  auto fence_a = la.fence();
  auto lb = b.make_lock(n);
  std::atomic<bool> got_b{false}, release_b{false};
  std::jthread waiter([&] {
    got_b = lb.try_lock_for(60s);
    if (!got_b) return;
    EXPECT_GT(lb.fence(), fence_a);
    eventually([&] { return release_b.load(); }, 60s);
    lb.unlock();
  });
  ASSERT_TRUE(eventually([&] { return zookeeper::stats(b.get_backend()).waiting == 1; }, 30s));

  // Expire a's session from outside: a second handle on the same session id, then closed
  // (zookeeper_close ends the session on the server). a's client may win the session back
  // before the close is sent (the close is then skipped), so repeat until it took effect.
  auto cred = zookeeper::current_session(a.get_backend());
  clientid_t id{};
  id.client_id = cred.id;
  std::memcpy(id.passwd, cred.password.data(), sizeof id.passwd);
  for (int attempt = 0; attempt < 30 && !got_b; ++attempt) {
    try {
      raw_zk dup(url_, &id, cred.timeout_ms);
    } catch (const std::exception&) {
      // The session is already gone: the handle could not attach to it.
    }
    eventually([&] { return got_b.load(); }, 2s);
  }
  ASSERT_TRUE(eventually([&] { return got_b.load(); }, 30s));
  // The holder learns it lost the lock: via its renewal thread or an explicit renew.
  EXPECT_TRUE(eventually([&] { return la.lost() || !la.renew(); }, 30s));
  EXPECT_TRUE(la.lost());
  EXPECT_TRUE(eventually([&] { return lost_calls.load() == 1; }, 5s));
  la.unlock();  // must not touch b's hold
  EXPECT_EQ(raw.queue_length(n), 1);
  // The client reconnects with a new session and keeps working.
  try {
    EXPECT_FALSE(la.try_lock_for(1s));  // b holds
  } catch (const connection_error&) {
    // Allowed: the client may still be finding out that its old session ended.
  }
  release_b = true;
  waiter.join();
  EXPECT_TRUE(la.try_lock_for(10s));
  EXPECT_GT(la.fence(), fence_a);
  la.unlock();
  auto st = zookeeper::stats(a.get_backend());
  EXPECT_EQ(st.sessions, 2u);
  EXPECT_GE(st.expirations, 1u);
  EXPECT_TRUE(raw.no_orphans({n}));
}

TEST_F(zk, expired_session_is_reported_lost_at_once_without_a_renewal) {
  auto a = connect(url_);
  auto n = unique_name("lost-at-once");
  // No renewals and a long lease: only the backend's loss report can tell the holder.
  auto la = a.make_lock(n, {.lease = 120s, .auto_renew = false});
  std::atomic<bool> lost{false};
  la.on_lost([&](const std::string&) { lost = true; });
  la.lock();
  auto cred = zookeeper::current_session(a.get_backend());
  clientid_t id{};
  id.client_id = cred.id;
  std::memcpy(id.passwd, cred.password.data(), sizeof id.passwd);
  auto ended = clock_type::now();
  for (int attempt = 0; attempt < 30 && !lost; ++attempt) {
    try {
      ended = clock_type::now();
      raw_zk dup(url_, &id, cred.timeout_ms);  // closing it ends the session on the server
    } catch (const std::exception&) {
      // The session is already gone.
    }
    eventually([&] { return lost.load(); }, 2s);
  }
  ASSERT_TRUE(eventually([&] { return lost.load(); }, 20s));
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - ended);
  std::cout << "[ info     ] on_lost " << took.count() << " ms after the session was ended\n";
  EXPECT_TRUE(la.lost());
  la.unlock();
}

TEST_F(zk, killed_holder_process_frees_the_lock_within_the_session_timeout) {
  auto n = unique_name("killed");
  const std::string short_url = sqlock::test::url_with(url_, "session_timeout=2s");
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  // Fork before this process opens any ZooKeeper handle.
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(fds[0]);
    try {
      auto c = connect(short_url);
      auto l = c.make_lock(n);
      l.lock();
      char ok = 'y';
      if (::write(fds[1], &ok, 1) != 1) ::_exit(3);
      for (;;) ::pause();
    } catch (...) {
      ::_exit(2);
    }
  }
  ::close(fds[1]);
  char ok = 0;
  ASSERT_EQ(::read(fds[0], &ok, 1), 1) << "child did not take the lock";
  ::close(fds[0]);
  auto b = connect(url_);
  raw_zk raw(url_);
  auto lb = b.make_lock(n);
  EXPECT_FALSE(lb.try_lock());
  auto killed = clock_type::now();
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(lb.try_lock_for(60s));  // liveness bound; expected within ~2 s (the session)
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - killed);
  RecordProperty("handoff_after_kill_ms", std::to_string(took.count()));
  std::cout << "[ info     ] lock free " << took.count() << " ms after SIGKILL of the holder\n";
  EXPECT_EQ(raw.queue_length(n), 1);
  lb.unlock();
  EXPECT_TRUE(raw.no_orphans({n}));
}

TEST_F(zk, list_shows_holder_and_fence_but_not_waiters) {
  auto a = connect(url_, {.holder = "host-a:1:prog"});
  auto b = connect(url_);
  auto tag = unique_name("list");
  auto la = a.make_lock(tag + "/x");
  la.lock();
  auto lb = b.make_lock(tag + "/x");
  std::jthread waiter([&] { EXPECT_FALSE(lb.try_lock_for(1500ms)); });
  ASSERT_TRUE(eventually([&] { return zookeeper::stats(b.get_backend()).waiting == 1; }, 30s));
  auto rows = b.list(tag);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].name, tag + "/x");
  EXPECT_EQ(rows[0].owner, la.owner());
  EXPECT_EQ(rows[0].fence, la.fence());
  EXPECT_EQ(rows[0].holder, "host-a:1:prog");
  EXPECT_EQ(rows[0].expires_at, "");
  EXPECT_FALSE(rows[0].acquired_at.empty());
  waiter.join();
  la.unlock();
  EXPECT_TRUE(b.list(tag).empty());
}

TEST_F(zk, digest_acl_keeps_other_users_out) {
  auto u = url::parse(url_);
  std::string hosts;
  for (const auto& h : u.hosts)
    hosts += (hosts.empty() ? "" : ",") + h.host + ":" + std::to_string(h.port);
  // A root of its own: creator ACLs on the base nodes too.
  const std::string root = "/sqlock-acl-" + random_token().substr(0, 8);
  auto alice = connect("zookeeper://alice:alice-pw@" + hosts + root);
  auto n = unique_name("acl");
  auto la = alice.make_lock(n);
  la.lock();
  EXPECT_EQ(alice.list(n).size(), 1u);
  auto alice2 = connect("zookeeper://alice:alice-pw@" + hosts + root);
  EXPECT_FALSE(alice2.make_lock(n).try_lock());  // same identity: shares the locks
  auto mallory = connect("zookeeper://mallory:guess@" + hosts + root);
  EXPECT_THROW(mallory.make_lock(n).try_lock(), auth_error);  // no access to the queue
  EXPECT_THROW(mallory.force_release(n), auth_error);         // nor to the holder's node
  auto anon = connect("zookeeper://" + hosts + root);
  EXPECT_THROW(anon.list(), auth_error);
  la.unlock();
  EXPECT_TRUE(alice2.make_lock(n).try_lock());
}

// ---- on the 3-server ensemble ----

TEST(zk_ensemble, locks_survive_a_stopped_leader) {
  std::string url, ctl;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_ZOOKEEPER_ENSEMBLE_URL", url);
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_ZOOKEEPER_ENSEMBLE_CTL", ctl);
  ensemble_guard exclusive(ctl);
  register_builtin_backends();
  const std::string u = sqlock::test::url_with(url, "session_timeout=15s");
  auto a = connect(u);
  auto b = connect(u);
  auto c = connect(u);
  raw_zk raw(url);
  auto n1 = unique_name("ens-held"), n2 = unique_name("ens-new");
  auto la = a.make_lock(n1, {.lease = 20s});
  std::atomic<int> lost_calls{0};
  la.on_lost([&](const std::string&) { ++lost_calls; });
  la.lock();
  auto fence = la.fence();
  auto lb = b.make_lock(n1);
  std::atomic<bool> got_b{false};
  std::atomic<std::uint64_t> fence_b{0};
  std::jthread waiter([&] {
    got_b = lb.try_lock_for(120s);
    if (!got_b) return;
    fence_b = lb.fence();
    lb.unlock();
  });
  ASSERT_TRUE(eventually([&] { return zookeeper::stats(b.get_backend()).waiting == 1; }, 30s));

  // Stop the leader (a new one must be elected); restart it whatever happens below.
  std::string out;
  {
    FILE* p = ::popen((ctl + " leader").c_str(), "r");
    ASSERT_NE(p, nullptr);
    char buf[16] = {};
    if (std::fgets(buf, sizeof buf, p)) out = buf;
    ::pclose(p);
  }
  int leader = std::atoi(out.c_str());
  ASSERT_GE(leader, 1) << "no leader found";
  ASSERT_LE(leader, 3);
  struct restart_later {
    std::string ctl;
    int id;
    ~restart_later() {
      std::string s = ctl + " start " + std::to_string(id), w = ctl + " wait " + std::to_string(id);
      if (std::system(s.c_str()) != 0 || std::system(w.c_str()) != 0)
        ADD_FAILURE() << "could not restart ensemble member " << id;
    }
  };
  ASSERT_EQ(std::system((ctl + " stop " + std::to_string(leader)).c_str()), 0);
  restart_later guard{ctl, leader};

  // The remaining two servers form a quorum: new locks work once a leader is elected.
  auto lc = c.make_lock(n2);
  bool got_c = false;
  auto until = clock_type::now() + 90s;
  while (!got_c && clock_type::now() < until) {
    try {
      got_c = lc.try_lock_for(5s);
    } catch (const connection_error&) {
      std::this_thread::sleep_for(200ms);
    }
  }
  EXPECT_TRUE(got_c);
  // The holder still holds: its session moved to a surviving server.
  bool renewed = false;
  until = clock_type::now() + 60s;
  while (!renewed && clock_type::now() < until) {
    try {
      renewed = la.renew();
      if (!renewed) break;
    } catch (const connection_error&) {
      std::this_thread::sleep_for(200ms);
    }
  }
  EXPECT_TRUE(renewed);
  EXPECT_FALSE(la.lost());
  EXPECT_EQ(lost_calls.load(), 0);
  EXPECT_FALSE(got_b.load());  // the waiter still waits
  la.unlock();
  waiter.join();
  EXPECT_TRUE(got_b);
  EXPECT_GT(fence_b.load(), fence);
  if (got_c) lc.unlock();
  EXPECT_TRUE(eventually([&] { return raw.no_orphans({n1, n2}); }, 10s));
}

TEST(zk_ensemble, quorum_loss_is_unknown_then_lost_after_the_session_timeout) {
  std::string url, ctl;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_ZOOKEEPER_ENSEMBLE_URL", url);
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_ZOOKEEPER_ENSEMBLE_CTL", ctl);
  ensemble_guard exclusive(ctl);
  register_builtin_backends();
  auto a = connect(sqlock::test::url_with(url, "session_timeout=2s"));
  auto n = unique_name("ens-suspended");
  // A lease far longer than the session: the backend's policy, not the core's lease, decides.
  auto la = a.make_lock(n, {.lease = 120s, .auto_renew = false});
  la.lock();
  struct restarter {
    std::string ctl;
    std::vector<int> ids;
    void restart() {
      for (int id : ids)
        if (std::system((ctl + " start " + std::to_string(id)).c_str()) != 0)
          ADD_FAILURE() << "could not start ensemble member " << id;
      for (int id : ids)
        if (std::system((ctl + " wait " + std::to_string(id)).c_str()) != 0)
          ADD_FAILURE() << "ensemble member " << id << " did not come back";
      ids.clear();
    }
    ~restarter() { restart(); }
  } guard{ctl, {}};
  for (int id : {1, 2}) {  // two of three: no quorum, the last server refuses clients
    ASSERT_EQ(std::system((ctl + " stop " + std::to_string(id)).c_str()), 0);
    guard.ids.push_back(id);
  }
  int unknown = 0;
  bool lost = false;
  auto until = clock_type::now() + 60s;
  while (!lost && clock_type::now() < until) {
    try {
      lost = !a.get_backend().renew(lease_info{n, la.owner(), la.fence(), nullptr}, 120s,
                                    sqlock::test::soon());
      if (!lost) std::this_thread::sleep_for(100ms);  // still connected: not noticed yet
    } catch (const connection_error&) {
      ++unknown;  // suspended: state unknown until the session timeout has passed
      std::this_thread::sleep_for(100ms);
    }
  }
  EXPECT_TRUE(lost) << "a suspended session was never reported lost";
  EXPECT_FALSE(la.renew());
  EXPECT_TRUE(la.lost());
  std::cout << "[ info     ] " << unknown << " renewals reported 'unknown' before 'lost'\n";
  guard.restart();  // quorum back
  la.unlock();      // deletes the node if the session survived the outage
  auto b = connect(url);
  auto lb = b.make_lock(n);
  bool got = false;
  until = clock_type::now() + 60s;
  while (!got && clock_type::now() < until) {
    try {
      got = lb.try_lock_for(5s);
    } catch (const connection_error&) {
      std::this_thread::sleep_for(200ms);
    }
  }
  EXPECT_TRUE(got);
  if (got) lb.unlock();
  raw_zk raw(url);
  EXPECT_TRUE(eventually([&] { return raw.no_orphans({n}); }, 10s));
}
