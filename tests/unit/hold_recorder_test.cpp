// hold_recorder (shared by the PostgreSQL and MySQL advisory backends, and the SQL engine's
// waiting requests): a hold is written once it has lived the delay, never when it ends before;
// flush() writes what waits at once; a failed write is tried again; released() says whether the
// hold's record was written; with upkeep, the end of a written record is written too, and a live
// record is written again.
#include "sql/hold_recorder.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace sqlock;
using namespace std::chrono_literals;
using record = sql::hold_recorder::record;
using key = sql::hold_recorder::key;

namespace {

// The batches a recorder wrote; `failures` writes throw first.
struct sink {
  std::mutex m;
  std::vector<std::vector<record>> batches;
  std::vector<key> ended;
  std::atomic<int> failures{0};
  std::atomic<int> calls{0};

  sql::hold_recorder::writer writer() {
    return [this](const sql::hold_recorder::batch& b, steady_time) {
      ++calls;
      if (failures.load() > 0) {
        --failures;
        throw std::runtime_error("server down");
      }
      std::lock_guard g(m);
      if (!b.records.empty()) batches.push_back(b.records);
      ended.insert(ended.end(), b.ended.begin(), b.ended.end());
    };
  }
  std::vector<key> ends() {
    std::lock_guard g(m);
    return ended;
  }
  // Waits (up to 10 s) until `n` ends were written.
  std::vector<key> await_ends(std::size_t n) {
    for (auto until = std::chrono::steady_clock::now() + 10s;
         ends().size() < n && std::chrono::steady_clock::now() < until;)
      std::this_thread::sleep_for(1ms);
    return ends();
  }
  std::vector<record> written() {
    std::lock_guard g(m);
    std::vector<record> all;
    for (const auto& b : batches) all.insert(all.end(), b.begin(), b.end());
    return all;
  }
  // Waits (up to 10 s) until `n` records were written.
  std::vector<record> await(std::size_t n) {
    for (auto until = std::chrono::steady_clock::now() + 10s;
         written().size() < n && std::chrono::steady_clock::now() < until;)
      std::this_thread::sleep_for(1ms);
    return written();
  }
};

sql::hold_recorder::hold a_hold(const std::string& name, std::uint64_t fence) {
  return {name, "owner-" + name, "host:1:app", fence, 4242, std::chrono::steady_clock::now()};
}

}  // namespace

TEST(hold_recorder, a_hold_that_lasts_is_written_once_with_its_age) {
  sink s;
  sql::hold_recorder r(s.writer(), 20ms, 1s);
  r.held(a_hold("a", 7));
  auto got = s.await(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].name, "a");
  EXPECT_EQ(got[0].owner, "owner-a");
  EXPECT_EQ(got[0].holder, "host:1:app");
  EXPECT_EQ(got[0].fence, 7u);
  EXPECT_EQ(got[0].pid, 4242);
  EXPECT_GE(got[0].age_ms, 20);
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(s.written().size(), 1u) << "written once";
  EXPECT_TRUE(r.released("a", "owner-a")) << "its record was written";
}

TEST(hold_recorder, a_hold_released_before_the_delay_is_never_written) {
  sink s;
  sql::hold_recorder r(s.writer(), 200ms, 1s);
  r.held(a_hold("brief", 1));
  EXPECT_FALSE(r.released("brief", "owner-brief"));
  r.held(a_hold("long", 2));
  auto got = s.await(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].name, "long");
  EXPECT_EQ(s.calls.load(), 1);
}

TEST(hold_recorder, flush_writes_every_waiting_hold_at_once) {
  sink s;
  sql::hold_recorder r(s.writer(), std::chrono::hours(1), 1s);
  r.held(a_hold("x", 1));
  r.held(a_hold("y", 2));
  r.flush(std::chrono::steady_clock::now() + 10s);
  EXPECT_EQ(s.written().size(), 2u) << "flush returns once the batch is written";
  r.flush(std::chrono::steady_clock::now() + 10s);  // nothing waits: returns at once
  EXPECT_EQ(s.calls.load(), 1);
}

TEST(hold_recorder, a_failed_write_is_tried_again) {
  sink s;
  s.failures = 2;
  sql::hold_recorder r(s.writer(), 0ms, 1s);
  r.held(a_hold("z", 9));
  auto got = s.await(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].fence, 9u);
  EXPECT_EQ(s.calls.load(), 3);
}

TEST(hold_recorder, a_hold_taken_again_replaces_the_one_whose_end_was_not_told) {
  sink s;
  sql::hold_recorder r(s.writer(), std::chrono::hours(1), 1s);
  r.held(a_hold("n", 1));
  r.held(a_hold("n", 2));
  r.flush(std::chrono::steady_clock::now() + 10s);
  auto got = s.written();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].fence, 2u);
}

// The waiting requests' upkeep: the end of a written record is written (once, and again after a
// failed write); the end of one never written is not.
TEST(hold_recorder, with_ends_written_a_written_record_has_its_end_written) {
  sink s;
  sql::hold_recorder r(s.writer(), 10ms, 1s, {.ends_written = true});
  r.held(a_hold("w", 0));
  ASSERT_EQ(s.await(1).size(), 1u);
  s.failures = 1;
  EXPECT_TRUE(r.released("w", "owner-w"));
  auto ends = s.await_ends(1);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0], (key{"w", "owner-w"}));
  EXPECT_EQ(s.calls.load(), 3) << "the record, the failed end, the end again";
  r.held(a_hold("brief", 0));
  EXPECT_FALSE(r.released("brief", "owner-brief"));
  r.flush(std::chrono::steady_clock::now() + 10s);
  EXPECT_EQ(s.ends().size(), 1u) << "nothing of a record never written";
  EXPECT_EQ(s.written().size(), 1u);
}

TEST(hold_recorder, a_live_record_is_written_again_until_it_ends) {
  sink s;
  sql::hold_recorder r(s.writer(), 0ms, 1s, {.ends_written = true, .rewrite_every = 30ms});
  r.held(a_hold("long", 0));
  auto got = s.await(3);
  ASSERT_GE(got.size(), 3u);
  EXPECT_EQ(got[2].name, "long");
  EXPECT_GE(got[2].age_ms, got[0].age_ms + 50) << "written again with its age";
  EXPECT_TRUE(r.released("long", "owner-long"));
  ASSERT_EQ(s.await_ends(1).size(), 1u);
  const auto writes = s.written().size();
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(s.written().size(), writes) << "not written again once ended";
}

// Many records at once (a client with thousands of waiting requests): each written once, only
// the due ones taken, and every end written; a failed batch is tried again whole.
TEST(hold_recorder, thousands_of_records_are_each_written_once_and_ended_once) {
  sink s;
  s.failures = 1;
  sql::hold_recorder r(s.writer(), 0ms, 1s,
                       {.ends_written = true, .rewrite_every = std::chrono::hours(1)});
  constexpr int n = 3000;
  for (int i = 0; i < n; ++i) r.held(a_hold("h" + std::to_string(i), 0));
  r.held(a_hold("late", 0));
  r.flush(std::chrono::steady_clock::now() + 10s);
  auto got = s.await(n + 1);
  std::set<std::string> names;
  for (const auto& g : got) names.insert(g.name);
  EXPECT_EQ(got.size(), static_cast<std::size_t>(n + 1)) << "each once, after the failed batch";
  EXPECT_EQ(names.size(), static_cast<std::size_t>(n + 1));
  for (int i = 0; i < n; ++i)
    EXPECT_TRUE(r.released("h" + std::to_string(i), "owner-h" + std::to_string(i)));
  auto ends = s.await_ends(n);
  EXPECT_EQ(ends.size(), static_cast<std::size_t>(n));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(s.written().size(), static_cast<std::size_t>(n + 1))
      << "none written again before its hour";
}

TEST(hold_recorder, destroyed_while_a_task_writes_it_waits_for_the_write_and_writes_no_more) {
  // The writes run as tasks on the driver threads (run_in_background), not on a thread of the
  // recorder's: its destructor waits for one writing now, and later tasks find it gone.
  std::atomic<bool> writing{false}, written{false}, destroyed{false};
  std::atomic<int> after_destruction{0};
  auto r = std::make_unique<sql::hold_recorder>(
      [&](const sql::hold_recorder::batch&, steady_time) {
        if (destroyed) ++after_destruction;
        writing = true;
        std::this_thread::sleep_for(300ms);
        written = true;
      },
      1ms, 5s);
  r->held(a_hold("slow", 1));
  for (auto until = std::chrono::steady_clock::now() + 10s;
       !writing && std::chrono::steady_clock::now() < until;)
    std::this_thread::sleep_for(1ms);
  ASSERT_TRUE(writing);
  r->held(a_hold("next", 2));  // due while the write runs
  r.reset();
  EXPECT_TRUE(written) << "the destructor did not wait for the write";
  destroyed = true;
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(after_destruction.load(), 0);
}
