// "No allocation on the hot path when nobody listens": a lock/unlock cycle allocates exactly as
// much with a logger whose level filters every event out as with no observer at all, and a
// listening logger is what makes the difference. Counts every operator new of the process (its
// own test program, so no other test's threads interfere).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "sqlock/client.hpp"
#include "sqlock/memory.hpp"
#include "sqlock/random.hpp"

namespace {
std::atomic<std::size_t> allocations{0};
}  // namespace

void* operator new(std::size_t n) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}

using namespace sqlock;
using namespace std::chrono_literals;

namespace {

// Allocations of `cycles` lock/unlock pairs after one warm-up pair.
std::size_t allocations_of_cycles(std::shared_ptr<observer> o, int cycles) {
  client c(memory::open("alloc-" + random_token()), {.observer = std::move(o)});
  auto l = c.make_lock("hot", {.lease = 60s, .auto_renew = false});
  l.lock();
  l.unlock();
  auto before = allocations.load();
  for (int i = 0; i < cycles; ++i) {
    l.lock();
    l.unlock();
  }
  return allocations.load() - before;
}

}  // namespace

TEST(observer_hot_path, a_logger_below_its_level_allocates_nothing_more) {
  int lines = 0;
  auto none = allocations_of_cycles(nullptr, 50);
  auto quiet = allocations_of_cycles(
      make_logger(log_level::error, [&](log_level, std::string_view) { ++lines; }), 50);
  auto loud = allocations_of_cycles(
      make_logger(log_level::trace, [&](log_level, std::string_view) { ++lines; }), 50);
  EXPECT_EQ(quiet, none);
  EXPECT_GT(loud, none) << "formatting lines allocates: the comparison can see a difference";
  EXPECT_EQ(lines, 3 * 51);  // only the trace logger spoke: attempt, acquired, released
}
