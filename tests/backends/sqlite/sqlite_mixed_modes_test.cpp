// One name, one lock across SQLite's two modes (pessimistic, optimistic share one database's
// tables and fence counter): the mixed-mode section of the conformance machinery
// (conformance_mixed_modes.hpp), each mode in a process of its own on one database file.
#include <gtest/gtest.h>

#include "conformance_mixed_modes.hpp"

namespace sqlock::test {
namespace {

const std::vector<std::string> modes{"pessimistic", "optimistic"};

mixed::url_for url() {
  static const temp_dir dir;  // removed when the program ends
  return [](const std::string& mode) {
    return "sqlite:" + (dir.path / "mixed.db").string() + "?mode=" + mode;
  };
}

TEST(sqlite_mixed, both_modes_exclude_each_other) {
  mixed::pairs_exclude(url(), modes);
}

TEST(sqlite_mixed, shared_holds_of_both_modes_share_the_name_and_exclude_an_exclusive_one) {
  mixed::shared_across(url(), modes);
}

TEST(sqlite_mixed, permits_of_both_modes_count_together) {
  mixed::permits_count_together(url(), modes);
}

TEST(sqlite_mixed, a_semaphore_of_another_size_in_the_other_mode_is_a_config_error) {
  mixed::sizes_must_agree(url(), modes);
}

TEST(sqlite_mixed, one_holder_at_a_time_and_fences_in_one_rising_order) {
  mixed::one_order(url(), modes);
}

}  // namespace
}  // namespace sqlock::test
