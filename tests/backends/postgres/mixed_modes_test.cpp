// One name, one lock across PostgreSQL's modes (schema version 10): the mixed-mode section of the
// conformance machinery (conformance_mixed_modes.hpp) over pessimistic, optimistic and advisory
// mode as the EXECUTE-only role, and what `list` shows of a name held in another mode.
#include <gtest/gtest.h>

#include "conformance_mixed_modes.hpp"
#include "pg_env.hpp"

namespace sqlock::test {
namespace {

const std::vector<std::string> modes{"pessimistic", "optimistic", "advisory"};

class postgres_mixed : public postgres {
 protected:
  mixed::url_for url() const {
    return [app = app_](const std::string& mode) { return pg::with(app, "mode=" + mode); };
  }
};

TEST_F(postgres_mixed, every_pair_of_modes_excludes_each_other) {
  mixed::pairs_exclude(url(), modes);
}

TEST_F(postgres_mixed, shared_holds_of_two_modes_share_the_name_and_exclude_an_exclusive_one) {
  mixed::shared_across(url(), modes);
}

TEST_F(postgres_mixed, permits_of_every_mode_count_together) {
  mixed::permits_count_together(url(), modes);
}

TEST_F(postgres_mixed, a_semaphore_of_another_size_in_another_mode_is_a_config_error) {
  mixed::sizes_must_agree(url(), modes);
}

TEST_F(postgres_mixed, one_holder_at_a_time_and_fences_in_one_rising_order) {
  mixed::one_order(url(), modes);
}

TEST_F(postgres_mixed, list_shows_the_holder_with_its_mode) {
  const auto name = unique_name("mixed-list");
  auto adv = sqlock::connect(url()("advisory"));
  auto l = adv.make_lock(name);
  ASSERT_TRUE(l.try_lock());
  auto row = sqlock::connect(url()("pessimistic"));
  EXPECT_FALSE(row.make_lock(name).try_lock());
  // The advisory hold is recorded once it has lasted ~10 ms (in the background).
  std::vector<lock_status> held;
  ASSERT_TRUE(eventually([&] {
    held = row.list(name);
    return held.size() == 1;
  }));
  EXPECT_EQ(held[0].mode, "advisory");
  EXPECT_EQ(held[0].fence, l.fence());
}

}  // namespace
}  // namespace sqlock::test
