// The lock kinds in the core with the memory backend: the writer mark's life, a leader told of
// its loss before a successor can be elected while renewals hang, run_exclusive's refusal of
// at_least where holds die with their holder.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "sqlock/backend.hpp"
#include "sqlock/client.hpp"
#include "sqlock/memory.hpp"
#include "sqlock/random.hpp"

using namespace sqlock;
using namespace std::chrono_literals;

namespace {

using clock = std::chrono::steady_clock;

// The memory store seen through a backend whose renewals can hang (every one runs to its
// deadline and its outcome is unknown, like a blackholed connection), that may declare holds
// dying with their holder (linger false), and that records when it last granted a hold.
class watched final : public backend {
 public:
  explicit watched(const std::string& store, bool linger = true)
      : inner_(memory::open(store)), linger_(linger) {}
  std::atomic<bool> hang_renewals{false};
  std::atomic<clock::rep> granted_at{0};  // when the store last granted a hold (0 = never)

  std::optional<lease_info> try_acquire(const lock_request& r, steady_time d) override {
    return granted(inner_->try_acquire(r, d));
  }
  // The store's own acquisition, recording its grants.
  std::unique_ptr<acquisition> make_acquisition(const lock_request& r,
                                                const wait_policy& p) override {
    struct recording final : acquisition {
      recording(watched& w, std::unique_ptr<acquisition> a) : of(w), inner(std::move(a)) {}
      std::optional<lease_info> attempt(steady_time d) override {
        return of.granted(inner->attempt(d));
      }
      void wait(steady_time u, const std::stop_token& s) override { inner->wait(u, s); }
      void cancel() noexcept override { inner->cancel(); }
      watched& of;
      std::unique_ptr<acquisition> inner;
    };
    return std::make_unique<recording>(*this, inner_->make_acquisition(r, p));
  }
  bool renew(const lease_info& l, milliseconds dur, steady_time d) override {
    if (hang_renewals) {
      std::this_thread::sleep_until(d);
      throw connection_error("renewal did not answer (test)");
    }
    return inner_->renew(l, dur, d);
  }
  bool release(const lease_info& l, steady_time d) override { return inner_->release(l, d); }
  store_admin* admin() noexcept override { return inner_->admin(); }
  capabilities caps() const noexcept override {
    auto c = inner_->caps();
    c.linger = linger_;
    return c;
  }
  std::string describe() const override { return "watched " + inner_->describe(); }
  std::string kind() const override { return "watched-memory"; }

 private:
  std::optional<lease_info> granted(std::optional<lease_info> l) {
    if (l) granted_at = clock::now().time_since_epoch().count();
    return l;
  }
  std::shared_ptr<backend> inner_;
  bool linger_;
};

std::string new_store() {
  return "kinds-" + random_token();
}

}  // namespace

TEST(kinds, a_waiting_writer_keeps_new_readers_out_until_its_call_ends) {
  auto store = new_store();
  client a(memory::open(store)), b(memory::open(store)), c(memory::open(store));
  auto ra = a.make_shared_mutex("rw");
  auto wb = b.make_shared_mutex("rw");
  auto rc = c.make_shared_mutex("rw");
  ra.lock_shared();
  EXPECT_FALSE(wb.try_lock_for(200ms));  // its call ended: its mark is gone
  EXPECT_TRUE(rc.try_lock_shared());
  rc.unlock_shared();
  EXPECT_FALSE(wb.try_lock());  // one attempt leaves no mark
  EXPECT_TRUE(rc.try_lock_shared());
  rc.unlock_shared();
  std::atomic<bool> writer_got{false}, checked{false};
  std::atomic<std::uint64_t> fence{0};
  std::thread writer([&] {  // a shared_mutex's holds belong to threads: this one's to it
    writer_got = wb.try_lock_for(20s);
    if (!writer_got) return;
    fence = wb.fence();
    while (!checked) std::this_thread::sleep_for(1ms);
    wb.unlock();
  });
  bool kept_out = false;
  for (int i = 0; i < 2000 && !kept_out; ++i) {
    kept_out = !rc.try_lock_shared();
    if (!kept_out) rc.unlock_shared();
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_TRUE(kept_out);
  ra.unlock_shared();
  for (int i = 0; i < 4000 && !writer_got; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_TRUE(writer_got);
  EXPECT_FALSE(rc.try_lock_shared());
  checked = true;
  writer.join();
  EXPECT_TRUE(rc.try_lock_shared());
  EXPECT_GT(rc.fence(), fence);
  rc.unlock_shared();
}

TEST(kinds, a_leader_is_told_of_its_loss_before_a_successor_can_be_elected) {
  auto store = new_store();
  auto lb = std::make_shared<watched>(store);
  auto sb = std::make_shared<watched>(store);
  client leader_client(lb), successor_client(sb);
  auto leader = leader_client.make_election("e", {.lease = 600ms});
  auto successor = successor_client.make_election("e", {.lease = 600ms});
  std::atomic<clock::rep> told_at{0};
  leader.on_lost([&](const std::string&) { told_at = clock::now().time_since_epoch().count(); });
  leader.campaign("a");
  const auto first_term = leader.term();
  lb->hang_renewals = true;  // every renewal from now on runs into its deadline
  ASSERT_TRUE(successor.campaign_for("b", 20s));
  EXPECT_TRUE(leader.lost());
  EXPECT_FALSE(leader.is_leader());
  ASSERT_NE(told_at.load(), 0);
  EXPECT_LT(told_at.load(), sb->granted_at.load());  // told first, then the store let b in
  const auto successor_term = successor.term();
  EXPECT_GT(successor_term, first_term);
  lb->hang_renewals = false;
  EXPECT_FALSE(leader.campaign_for("a", 100ms));  // after a lost term it may campaign again
  EXPECT_TRUE(successor.is_leader());
  successor.resign();
  EXPECT_TRUE(leader.campaign_for("a", 5s));
  EXPECT_GT(leader.term(), successor_term);
}

TEST(kinds, run_exclusive_refuses_at_least_where_holds_die_with_their_holder) {
  client c(std::make_shared<watched>(new_store(), false));
  bool ran = false;
  EXPECT_THROW(run_exclusive(c, "job", {.at_least = 1s}, [&] { ran = true; }), unsupported);
  EXPECT_FALSE(ran);
  EXPECT_TRUE(run_exclusive(c, "job", {.at_most = 1s}, [&] { ran = true; }));
  EXPECT_TRUE(ran);
}

TEST(kinds, run_exclusive_rethrows_and_still_frees_the_lock) {
  auto store = new_store();
  client a(memory::open(store)), b(memory::open(store));
  EXPECT_THROW(run_exclusive(a, "job", {}, [] { throw std::runtime_error("job failed"); }),
               std::runtime_error);
  EXPECT_TRUE(run_exclusive(b, "job", {}, [] {}));
}

TEST(kinds, a_permit_is_a_movable_hold_of_its_own) {
  auto store = new_store();
  client a(memory::open(store));
  auto s = a.make_semaphore("sem", 1);
  permit p = s.acquire();
  EXPECT_EQ(p.name(), "sem");
  permit moved = std::move(p);
  EXPECT_FALSE(p);  // NOLINT(bugprone-use-after-move): a moved-from permit is empty
  EXPECT_TRUE(moved);
  EXPECT_FALSE(s.try_acquire());
  moved = permit();  // move-assigning releases
  EXPECT_TRUE(s.try_acquire());
  EXPECT_THROW(p.fence(), usage_error);
}
