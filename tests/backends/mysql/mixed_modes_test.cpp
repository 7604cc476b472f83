// One name, one lock across the modes of a MySQL/MariaDB database (schema version 5): the
// mixed-mode section of the conformance machinery (conformance_mixed_modes.hpp). The three modes
// exclude each other and, on MariaDB, take fences in one rising order; shared holds and permits
// (row modes only: advisory mode has exclusive holds) count together across the two row modes.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "conformance_mixed_modes.hpp"
#include "mysql_env.hpp"

namespace sqlock::test {
namespace {

const std::vector<std::string> all_modes{"pessimistic", "optimistic", "advisory"};
const std::vector<std::string> row_modes{"pessimistic", "optimistic"};

class mysql_mixed : public ::testing::Test {
 protected:
  void SetUp() override {
    SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_URL", base_);
    ensure_mysql_schema(base_);
  }
  mixed::url_for url() const {
    return [b = base_](const std::string& mode) { return with_param(b, "mode", mode); };
  }
  std::string base_;
};

TEST_F(mysql_mixed, every_pair_of_modes_excludes_each_other) {
  mixed::pairs_exclude(url(), all_modes, false);
}

TEST_F(mysql_mixed, one_holder_at_a_time_and_fences_in_one_rising_order) {
  if (!sql::says_true(query(*raw_backend(base_), "SELECT @@version LIKE '%MariaDB%'")))
    GTEST_SKIP() << "MySQL 8: advisory fences come from the same counter row (no sequences)";
  mixed::one_order(url(), all_modes, 10);
}

TEST_F(mysql_mixed, shared_holds_of_the_row_modes_share_the_name) {
  mixed::shared_across(url(), row_modes);
}

TEST_F(mysql_mixed, permits_of_the_row_modes_count_together) {
  mixed::permits_count_together(url(), row_modes);
}

TEST_F(mysql_mixed, a_semaphore_of_another_size_in_the_other_row_mode_is_a_config_error) {
  mixed::sizes_must_agree(url(), row_modes);
}

// An advisory waiter waits in a statement that reads no table (schema version 7): before, it
// waited inside sqlock_advisory_take, whose statement kept the MEMORY table sqlock_row_names
// locked, and each row-mode acquire of a new name waited for that advisory wait to end (a
// try_lock past its 250 ms attempt threw "no answer by its deadline").
TEST_F(mysql_mixed, an_advisory_wait_holds_up_no_row_mode_acquire_of_another_name) {
  const auto held = unique_name("mixed-adv-held");
  auto holder = sqlock::connect(url()("advisory"));
  auto hold = holder.make_lock(held);
  ASSERT_TRUE(hold.try_lock());
  auto waiter_client = sqlock::connect(url()("advisory"));
  std::jthread waiter([&] {
    auto l = waiter_client.make_lock(held);
    EXPECT_FALSE(l.try_lock_for(std::chrono::seconds(3)));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the waiter is in GET_LOCK
  for (const auto& mode : row_modes) {
    auto rows = sqlock::connect(url()(mode));
    for (int i = 0; i < 3; ++i) {
      auto l = rows.make_lock(unique_name("mixed-rows-new"));
      bool got = false;
      EXPECT_NO_THROW(got = l.try_lock()) << mode;
      EXPECT_TRUE(got) << mode;
      if (got) l.unlock();
    }
  }
  waiter.join();
  hold.unlock();
}

}  // namespace
}  // namespace sqlock::test
