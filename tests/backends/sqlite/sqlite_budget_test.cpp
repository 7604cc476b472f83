// The connection budget of one SQLite client (URL max_connections=, default 8): the connections
// it keeps to the file, counted by the kernel (this process's descriptors of the database
// file), never exceed the budget and none is opened after warm-up while 16 or 50 threads lock
// names of their own; a try_lock_for() that finds both connections of max_connections=2 waiting
// for the write lock returns false by its deadline, opening no third.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "budget_load.hpp"
#include "sql/sql_engine.hpp"
#include "sqlock/client.hpp"
#include "test_env.hpp"

namespace sqlock::test {
namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

// Descriptors of this process open on `file` (one per SQLite connection to it).
int open_descriptors(const std::filesystem::path& file) {
  int n = 0;
  std::error_code ec;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    std::error_code lec;
    if (std::filesystem::read_symlink(fd.path(), lec) == file) ++n;
  }
  return n;
}

void stays_within_budget(int threads) {
  const temp_dir dir;
  const auto file = dir.path / "budget.db";
  auto c = sqlock::connect("sqlite:" + file.string());
  expect_within_budget(c, threads, unique_name("budget"), 8, [&] {
    return budget_sample{open_descriptors(file),
                         std::to_string(c.get_backend().connections()->opened)};
  });
}

TEST(sqlite_budget, sixteen_threads_of_one_client_stay_within_the_default_budget) {
  stays_within_budget(16);
}

TEST(sqlite_budget, fifty_threads_of_one_client_stay_within_the_default_budget) {
  stays_within_budget(50);
}

TEST(sqlite_budget, a_try_lock_for_that_finds_every_connection_busy_returns_false_in_time) {
  const temp_dir dir;
  const auto file = dir.path / "busy.db";
  auto c = sqlock::connect("sqlite:" + file.string() + "?max_connections=2");
  auto writer = std::dynamic_pointer_cast<sql::engine_backend>(
      make_backend("sqlite:" + file.string() + "?max_connections=1"));
  ASSERT_TRUE(writer);
  writer->with_connection([&](sql::connection& w) {
    // Another connection holds the write lock: the client's connections wait for it.
    w.query("BEGIN IMMEDIATE", clock::now() + 5s);
    expect_busy_budget_times_out(
        c, unique_name("busy"),
        [&] {
          // Both opened; a moment more for both acquires to reach the write lock.
          if (c.get_backend().connections()->open < 2) return false;
          std::this_thread::sleep_for(200ms);
          return true;
        },
        [&] { EXPECT_EQ(c.get_backend().connections()->peak, 2u) << "a third was opened"; },
        [&] { w.query("ROLLBACK", clock::now() + 5s); });
  });
}

}  // namespace
}  // namespace sqlock::test
