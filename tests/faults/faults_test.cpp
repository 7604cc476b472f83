// Network faults between a client and a real server, through tests/support/tcp_proxy.hpp:
// a blackholed path while a lock is held, a reset of every connection, an acquire whose answer
// is lost, a server that is down; on the SQL servers, releases in the background (release=async).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "async_release_checks.hpp"
#include "sql/sql_engine.hpp"
#include "sqlock/client.hpp"
#include "sqlock/url.hpp"
#include "tcp_proxy.hpp"
#include "test_env.hpp"

namespace sqlock::test {
namespace {

using namespace std::chrono_literals;

struct server {
  const char* name;
  const char* url_var;
};

class faults : public ::testing::TestWithParam<server> {
 protected:
  void SetUp() override {
    SQLOCK_REQUIRE_URL(GetParam().url_var, base_);
    auto u = url::parse(base_);
    ASSERT_FALSE(u.hosts.empty());
    host_ = u.hosts[0].host == "localhost" ? "127.0.0.1" : u.hosts[0].host;
    port_ = u.hosts[0].port;
    // A fresh server has no schema yet: install it unless it is current (other test programs
    // may be using it right now, so never re-run a current one).
    register_builtin_backends();
    auto b = make_backend(base_);
    try {
      b->verify();
    } catch (const config_error&) {
      if (auto* e = dynamic_cast<sql::engine_backend*>(b.get())) e->migrate();
    }
    proxy_ = std::make_unique<tcp_proxy>(host_, port_);
    via_ = with_port(proxy_->port());
  }
  // The base URL with its host:port replaced by 127.0.0.1:port.
  std::string with_port(int port) const {
    return with_host_port(base_, url::parse(base_).hosts[0].host, port_, port);
  }

  // Takes and gives back a hold through `c`, so that its connection is open before the proxy
  // drops answers (a connection opened while they are dropped never sends a request).
  static void open_before_answers_stop(client& c) {
    auto warm = c.make_lock(unique_name("warm"));
    ASSERT_TRUE(warm.try_lock());
    warm.unlock();
  }

  // Stops forwarding on every connection, and waits until the proxy's pumps have seen it
  // (they poll every 20 ms).
  void cut_path() {
    proxy_->blackhole(true);
    std::this_thread::sleep_for(100ms);
  }
  // Resets every connection, so that a request held in the proxy never reaches the server,
  // then forwards again.
  void restore_path_dropping_what_it_held() {
    proxy_->reset_all();
    std::this_thread::sleep_for(100ms);
    proxy_->blackhole(false);
  }
  // `b` gets `n` well before a 60 s lease of another client would end: that client's release
  // without an answer was tried again once the server answered.
  static void expect_release_tried_again(client& b, const std::string& n) {
    auto lb = b.make_lock(n);
    EXPECT_TRUE(lb.try_lock_for(20s)) << "the hold whose release got no answer stayed";
    lb.unlock();
  }

  std::string base_, host_, via_;
  int port_ = 0;
  std::unique_ptr<tcp_proxy> proxy_;
};

TEST_P(faults, blackholed_holder_reports_loss_and_never_frees_the_next_hold) {
  auto a = sqlock::connect(via_);
  auto b = sqlock::connect(base_);
  auto n = unique_name("blackhole");
  auto la = a.make_lock(n, {.lease = 1500ms});
  std::atomic<int> calls{0};
  la.on_lost([&](const std::string&) { ++calls; });
  la.lock();
  proxy_->blackhole(true);
  auto lb = b.make_lock(n);
  EXPECT_TRUE(lb.try_lock_for(20s));  // the server lets the lease run out
  for (int i = 0; i < 500 && !la.lost(); ++i) std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(la.lost());
  EXPECT_EQ(calls.load(), 1);
  proxy_->blackhole(false);
  la.unlock();  // owner-checked: b keeps its hold
  auto c = sqlock::connect(base_);
  EXPECT_FALSE(c.make_lock(n).try_lock());
  lb.unlock();
}

TEST_P(faults, reset_connections_do_not_lose_a_lease) {
  auto a = sqlock::connect(via_);
  auto b = sqlock::connect(base_);
  auto n = unique_name("reset");
  auto la = a.make_lock(n, {.lease = 5s});
  la.lock();
  proxy_->reset_all();
  std::this_thread::sleep_for(100ms);
  bool renewed = false;
  for (int i = 0; i < 5 && !renewed; ++i) {  // the first call may meet the broken connection
    try {
      renewed = la.renew();
    } catch (const connection_error&) {
    }
  }
  EXPECT_TRUE(renewed);
  EXPECT_FALSE(la.lost());
  EXPECT_FALSE(b.make_lock(n).try_lock());
  la.unlock();
  auto lb = b.make_lock(n);
  EXPECT_TRUE(lb.try_lock_for(5s));
  lb.unlock();
}

// A request that takes the lock on the server while its answer is lost leaves a hold that no
// caller has: the client releases it in the background once the server answers again, long
// before its 60 s lease would end.
TEST_P(faults, a_hold_whose_answer_was_lost_is_released_in_the_background) {
  auto a = sqlock::connect(via_);
  auto b = sqlock::connect(base_);
  open_before_answers_stop(a);
  auto n = unique_name("lost-answer");
  auto la = a.make_lock(n, {.lease = 60s});
  proxy_->drop_replies(true);
  EXPECT_THROW(la.try_lock_for(1s), connection_error);
  EXPECT_FALSE(la.owns_lock());
  proxy_->drop_replies(false);
  auto lb = b.make_lock(n);
  EXPECT_TRUE(lb.try_lock_for(20s)) << "the hold taken for the lost answer was never released";
  lb.unlock();
}

// The same for a reader's hold and a permit: the background release names the kind, which the
// SQL stores need to find the hold in their shared-holders table.
TEST_P(faults, a_shared_hold_or_permit_whose_answer_was_lost_is_released_in_the_background) {
  // Patient single tries: a full run once saw a warming try, on a connection opened after the
  // first lost answer, outlast 250 ms on the loaded machine.
  auto a = sqlock::connect(via_, patient_tries());
  auto b = sqlock::connect(base_);
  // Each lost request is sent on a connection that is open before the answers stop (a first
  // hold of the same kind opens it): a connection opened while they are dropped never gets
  // as far as sending it.
  auto lose = [&](auto&& warm, auto&& attempt) {
    warm();
    proxy_->drop_replies(true);
    EXPECT_THROW(attempt(), connection_error);
    proxy_->drop_replies(false);
  };
  auto readers = unique_name("lost-answer-shared");
  auto ra = a.make_shared_mutex(readers, {.lease = 60s});
  lose(
      [&] {
        auto warm = a.make_shared_mutex(unique_name("warm-shared"));
        ASSERT_TRUE(warm.try_lock_shared());
        warm.unlock_shared();
      },
      [&] { (void)ra.try_lock_shared_for(1s); });
  auto permits = unique_name("lost-answer-permit");
  auto pa = a.make_semaphore(permits, 1, {.lease = 60s});
  lose(
      [&] {
        auto warm = a.make_semaphore(unique_name("warm-permit"), 1);
        ASSERT_TRUE(warm.try_acquire());
      },
      [&] { (void)pa.try_acquire_for(1s); });
  auto writer = b.make_shared_mutex(readers);
  EXPECT_TRUE(writer.try_lock_for(20s)) << "the reader's hold taken for the lost answer stayed";
  writer.unlock();
  auto pb = b.make_semaphore(permits, 1);
  auto got = pb.try_acquire_for(20s);
  EXPECT_TRUE(got) << "the permit taken for the lost answer stayed";
}

// A wait stopped in the pause after an attempt whose answer never came (the proxy drops it;
// each attempt is bounded by a 1 s I/O timeout, and the stop is requested as the retry is
// announced): the call ends as `interrupted`, and the hold that attempt may have taken is
// released in the background like one of a call that ended at its deadline.
TEST_P(faults, a_wait_stopped_after_a_lost_answer_leaves_no_hold) {
  std::stop_source stop;
  sqlock::client_options o;
  o.waiting.on_retry = [&](std::string_view, std::string_view) { stop.request_stop(); };
  auto a =
      sqlock::connect(via_ + (via_.find('?') == std::string::npos ? "?" : "&") + "timeout=1s", o);
  auto b = sqlock::connect(base_);
  open_before_answers_stop(a);
  auto n = unique_name("lost-answer-stopped");
  auto la = a.make_lock(n, {.lease = 60s});
  proxy_->drop_replies(true);
  EXPECT_THROW(la.try_lock_for(20s, stop.get_token()), interrupted);
  EXPECT_TRUE(stop.stop_requested()) << "the attempt did not fail before its deadline";
  EXPECT_FALSE(la.owns_lock());
  proxy_->drop_replies(false);
  auto lb = b.make_lock(n);
  EXPECT_TRUE(lb.try_lock_for(20s)) << "the hold taken for the lost answer was never released";
  lb.unlock();
}

// A release that gets no answer (the path is cut, then every connection reset, so the request
// never arrives) is tried again in the background once the server answers, rather than
// leaving the hold to its 60 s lease.
TEST_P(faults, a_release_without_an_answer_is_tried_again) {
  auto a = sqlock::connect(via_, {.release_timeout = 1s});
  auto b = sqlock::connect(base_);
  auto n = unique_name("lost-release");
  auto la = a.make_lock(n, {.lease = 60s});
  ASSERT_TRUE(la.try_lock());
  cut_path();
  la.unlock();  // never throws: the failure is counted
  EXPECT_EQ(a.stats().release_errors, 1u);
  restore_path_dropping_what_it_held();
  expect_release_tried_again(b, n);
}

TEST_P(faults, a_server_that_is_down_is_a_connection_error) {
  int closed_port = 0;
  {
    tcp_proxy probe("127.0.0.1", 9);  // only to reserve an ephemeral port number
    closed_port = probe.port();
  }
  EXPECT_THROW(sqlock::connect(with_port(closed_port)), connection_error);
}

// connect() with a deadline returns by it when the server takes the connection and then says
// nothing (a frozen server): the caller's deadline, not the store's 5 s I/O timeout, bounds it.
TEST_P(faults, connect_returns_by_the_callers_deadline_when_the_server_says_nothing) {
  proxy_->blackhole(true);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(sqlock::connect(via_, {}, start + 1s), connection_error);
  const auto took = std::chrono::steady_clock::now() - start;
  // Bound with slack for a loaded machine; the I/O timeout it replaces is 5 s.
  EXPECT_LT(took, 3500ms) << "connect() outlived its deadline";
  proxy_->blackhole(false);
}

// The SQL servers, whose releases the client sends from a background thread with
// release=async (backend::release_in_background()).
class sql_faults : public faults {};

// release=async on a SQL server: unlock() returns at once although the server does not answer
// (with release=wait it waits up to release_timeout, 1 s here); the release that then gets no
// answer is counted and tried again in the background once the server answers, rather than
// leaving the hold to its 60 s lease.
TEST_P(sql_faults, an_async_release_returns_at_once_and_one_without_an_answer_is_tried_again) {
  auto a = sqlock::connect(url_with(via_, "release=async"), {.release_timeout = 1s});
  auto b = sqlock::connect(base_);
  auto n = unique_name("async-release");
  auto la = a.make_lock(n, {.lease = 60s});
  ASSERT_TRUE(la.try_lock());
  cut_path();
  const auto before = std::chrono::steady_clock::now();
  la.unlock();
  EXPECT_LT(std::chrono::steady_clock::now() - before, 500ms) << "unlock() waited for the server";
  EXPECT_FALSE(la.owns_lock());
  for (int i = 0; i < 250 && a.stats().release_errors == 0; ++i) std::this_thread::sleep_for(20ms);
  EXPECT_EQ(a.stats().release_errors, 1u) << "the release without an answer was not counted";
  restore_path_dropping_what_it_held();
  expect_release_tried_again(b, n);
}

// release=async in every mode: the same client's next acquire of a name waits for its own
// release still on its way instead of finding the name busy with it; many names in a row, as
// a client that locks one name after another does.
TEST_P(sql_faults, an_async_release_is_never_ahead_of_the_same_clients_next_acquire) {
  for (const char* mode : {"pessimistic", "optimistic", "advisory"}) {
    SCOPED_TRACE(mode);
    auto c = sqlock::connect(
        url_with(url_with(base_, "release=async"), std::string("mode=") + mode), patient_tries());
    std::vector<std::string> names;
    for (int i = 0; i < 20; ++i) names.push_back(unique_name("in-a-row"));
    expect_reacquire_never_behind_own_release(c, names);
  }
}

INSTANTIATE_TEST_SUITE_P(servers, sql_faults,
                         ::testing::Values(server{"postgres", "SQLOCK_TEST_POSTGRES_URL"},
                                           server{"mysql", "SQLOCK_TEST_MYSQL_URL"}),
                         [](const auto& p) { return std::string(p.param.name); });

INSTANTIATE_TEST_SUITE_P(servers, faults,
                         ::testing::Values(server{"postgres", "SQLOCK_TEST_POSTGRES_URL"},
                                           server{"mysql", "SQLOCK_TEST_MYSQL_URL"},
                                           server{"redis", "SQLOCK_TEST_REDIS_URL"}),
                         [](const auto& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace sqlock::test
