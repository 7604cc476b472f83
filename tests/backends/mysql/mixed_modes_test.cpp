// One name, one lock across the modes of a MySQL/MariaDB database (schema version 5): the
// mixed-mode section of the conformance machinery (conformance_mixed_modes.hpp). The three modes
// exclude each other and, on MariaDB, take fences in one rising order; shared holds and permits
// (row modes only: advisory mode has exclusive holds) count together across the two row modes.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace sqlock::test
