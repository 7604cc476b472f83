// mark_clearer (the SQL engine's writer marks removed in batches): every mark is sent once and
// every continuation runs once, after the batch that carried its mark; marks that arrive while
// a batch is being sent go out together in the next one; a batch that fails still ends its
// requests; the clearer may be destroyed by a continuation of its own batch, or while another
// thread sends one.
#include "sql/mark_clearer.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace sqlock;
using namespace std::chrono_literals;
using mark = sql::mark_clearer::mark;

namespace {

// The batches a clearer sent. While `gate` is closed, a batch waits for it to open.
struct store {
  std::mutex m;
  std::condition_variable cv;
  std::vector<std::vector<mark>> batches;
  bool gate_open = true;
  bool sending = false;  // a batch waits at the gate
  bool fail = false;

  sql::mark_clearer::clear_fn clear() {
    return [this](const std::vector<mark>& batch, steady_time) {
      std::unique_lock g(m);
      sending = true;
      cv.notify_all();
      cv.wait(g, [&] { return gate_open; });
      sending = false;
      batches.push_back(batch);
      if (fail) throw std::runtime_error("server down");
    };
  }
  void close_gate() {
    std::lock_guard g(m);
    gate_open = false;
  }
  void open_gate() {
    {
      std::lock_guard g(m);
      gate_open = true;
    }
    cv.notify_all();
  }
  void wait_sending() {
    std::unique_lock g(m);
    cv.wait(g, [&] { return sending; });
  }
};

}  // namespace

TEST(mark_clearer, marks_arriving_during_a_batch_go_out_together_in_the_next) {
  store s;
  sql::mark_clearer c(s.clear(), 1s);
  std::atomic<int> ended{0};
  s.close_gate();
  // The first caller sends its own mark and waits at the gate; the others only queue theirs.
  std::thread first([&] { c.clear_then("n0", "o0", [&] { ++ended; }); });
  s.wait_sending();
  for (int i = 1; i <= 100; ++i)
    c.clear_then("n" + std::to_string(i), "o" + std::to_string(i), [&] { ++ended; });
  EXPECT_EQ(ended.load(), 0) << "a continuation ran before its mark was sent";
  s.open_gate();
  first.join();  // the sender returns once nothing is pending
  EXPECT_EQ(ended.load(), 101);
  ASSERT_EQ(s.batches.size(), 2u);
  EXPECT_EQ(s.batches[0], (std::vector<mark>{{"n0", "o0"}}));
  EXPECT_EQ(s.batches[1].size(), 100u);
  EXPECT_EQ(s.batches[1].front(), (mark{"n1", "o1"}));
}

TEST(mark_clearer, every_mark_is_sent_once_from_many_threads) {
  store s;
  sql::mark_clearer c(s.clear(), 1s);
  std::atomic<int> ended{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i)
        c.clear_then("n", std::to_string(t) + ":" + std::to_string(i), [&] { ++ended; });
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ended.load(), 4000);
  std::set<std::string> owners;
  std::size_t sent = 0;
  for (const auto& b : s.batches) {
    sent += b.size();
    for (const auto& m : b) owners.insert(m.second);
  }
  EXPECT_EQ(sent, 4000u);
  EXPECT_EQ(owners.size(), 4000u);
}

TEST(mark_clearer, a_failed_batch_still_ends_its_requests) {
  store s;
  s.fail = true;
  sql::mark_clearer c(s.clear(), 1s);
  int ended = 0;
  c.clear_then("n", "o", [&] { ++ended; });
  c.clear_then("n", "p", [&] { ++ended; });
  EXPECT_EQ(ended, 2);
  EXPECT_EQ(s.batches.size(), 2u);
}

TEST(mark_clearer, a_continuation_may_destroy_the_clearer) {
  store s;
  auto c = std::make_unique<sql::mark_clearer>(s.clear(), 1s);
  std::atomic<int> ended{0};
  s.close_gate();
  std::thread first([&] {
    c->clear_then("n", "first", [&] {
      ++ended;
      c.reset();  // the client closed from a completion
    });
  });
  s.wait_sending();
  // Queued behind the batch being sent: ended without being sent once the clearer is gone.
  c->clear_then("n", "queued", [&] { ++ended; });
  s.open_gate();
  first.join();
  EXPECT_EQ(ended.load(), 2);
  EXPECT_EQ(c, nullptr);
  EXPECT_EQ(s.batches.size(), 1u);
}

TEST(mark_clearer, destroying_it_waits_for_a_batch_another_thread_sends) {
  store s;
  auto c = std::make_unique<sql::mark_clearer>(s.clear(), 1s);
  std::atomic<int> ended{0};
  s.close_gate();
  std::thread first([&] { c->clear_then("n", "first", [&] { ++ended; }); });
  s.wait_sending();
  c->clear_then("n", "queued", [&] { ++ended; });
  std::thread opener([&] {
    std::this_thread::sleep_for(50ms);
    s.open_gate();
  });
  c.reset();  // waits for the sender, then sends what is still queued itself
  EXPECT_EQ(ended.load(), 2);
  EXPECT_EQ(s.batches.size(), 2u);
  first.join();
  opener.join();
}
