// Renewals of many holds go to the backend in a few batches per renewal period
// (backend::renew_all), not one call per hold: the core hands over, with every renewal that is
// due, those due within half their period, and the worker gives the backend all it has queued.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "sqlock/backend.hpp"
#include "sqlock/client.hpp"
#include "sqlock/memory.hpp"
#include "sqlock/random.hpp"

using namespace sqlock;
using namespace std::chrono_literals;

namespace {

// The memory store, counting the batches the core asks it to renew and the holds in them.
class counting final : public backend {
 public:
  explicit counting(const std::string& store) : inner_(memory::open(store)) {}
  std::atomic<int> batches{0}, renewals{0};

  std::optional<lease_info> try_acquire(const lock_request& r, steady_time d) override {
    return inner_->try_acquire(r, d);
  }
  std::unique_ptr<acquisition> make_acquisition(const lock_request& r,
                                                const wait_policy& p) override {
    return inner_->make_acquisition(r, p);
  }
  bool renew(const lease_info& l, milliseconds dur, steady_time d) override {
    return inner_->renew(l, dur, d);
  }
  void renew_all(std::vector<renewal>& batch) noexcept override {
    ++batches;
    renewals += static_cast<int>(batch.size());
    backend::renew_all(batch);
  }
  bool release(const lease_info& l, steady_time d) override { return inner_->release(l, d); }
  capabilities caps() const noexcept override { return inner_->caps(); }
  std::string describe() const override { return "counting " + inner_->describe(); }
  std::string kind() const override { return "counting-memory"; }

 private:
  std::shared_ptr<backend> inner_;
};

}  // namespace

TEST(renewal_batch, many_holds_renew_in_a_few_batches_a_period) {
  auto store = "batch-" + random_token();
  auto b = std::make_shared<counting>(store);
  client c(b);
  constexpr int holds = 300;
  constexpr auto lease = 900ms;  // renewed every 300 ms
  std::vector<mutex> locks;
  locks.reserve(holds);
  for (int i = 0; i < holds; ++i) {
    locks.push_back(c.make_lock("n" + std::to_string(i), {.lease = lease}));
    ASSERT_TRUE(locks.back().try_lock());
    std::this_thread::sleep_for(1ms);  // due times spread over the period
  }
  const int batches_before = b->batches, renewals_before = b->renewals;
  std::this_thread::sleep_for(4 * lease);  // twelve periods
  const int batches = b->batches - batches_before, renewals = b->renewals - renewals_before;
  for (auto& l : locks) EXPECT_FALSE(l.lost());
  EXPECT_GE(renewals, holds * 8);  // every hold, at least every period and a half
  // One call per hold would be ~3,600 here; every renewal due within half a period joins the
  // batch that goes: about two a period, four at most with the scheduler's wake-ups.
  EXPECT_LE(batches, 12 * 4) << renewals << " renewals in " << batches << " batches";
  client other(memory::open(store));
  auto first = other.make_lock("n0");
  EXPECT_FALSE(first.try_lock());  // still held: renewed all along
  for (auto& l : locks) l.unlock();
  EXPECT_TRUE(first.try_lock());
  first.unlock();
}
