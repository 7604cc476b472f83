// soci+mysql: a deadlock (1213) or lock-wait timeout (1205) that an acquire still meets when a
// try_lock_for's deadline runs out is not obtained (false, no exception), as on the native
// backend (tests/backends/mysql/conflict_test.cpp), and leaves no row held. The conflict comes,
// on every attempt, from a trigger on the acquire's write of the hold into the name's row, in a
// database of the test's own.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "own_database.hpp"
#include "soci_env.hpp"
#include "sqlock/client.hpp"

namespace sqlock::test {
namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

class soci_conflict : public ::testing::TestWithParam<int> {};

TEST_P(soci_conflict, a_row_mode_acquire_failing_at_the_deadline_is_not_obtained) {
  std::string dba_url;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_DBA_URL", dba_url);
  own_database db(dba_url);
  sqlock::connect(db.dba() + "?migrate=auto");  // the same schema as the native backend's
  auto admin = raw_backend(db.dba());
  const std::string fail =
      std::string("SIGNAL SQLSTATE '") + (GetParam() == 1213 ? "40001" : "HY000") +
      "' SET MYSQL_ERRNO = " + std::to_string(GetParam()) + ", MESSAGE_TEXT = 'sqlock test'";
  query(*admin,
        "CREATE TRIGGER sqlock_test_conflict BEFORE UPDATE ON sqlock_locks FOR EACH ROW BEGIN "
        "IF NEW.owner <> '' AND OLD.owner = '' THEN " +
            fail + "; END IF; END");
  for (const char* mode : {"pessimistic", "optimistic"}) {
    SCOPED_TRACE(mode);
    auto c = sqlock::connect("soci+" + with_param(db.dba(), std::string("mode=") + mode));
    const auto name = unique_name("soci-conflict");
    auto l = c.make_lock(name, {.lease = 5s});
    const auto start = clock::now();
    bool got = true;
    EXPECT_NO_THROW(got = l.try_lock_for(400ms));
    EXPECT_FALSE(got);
    EXPECT_GE(clock::now() - start, 390ms);
    EXPECT_EQ(single(query(*admin, "SELECT COUNT(*) FROM sqlock_locks WHERE name = '" + name +
                                       "' AND owner <> ''")),
              "0");
  }
  query(*admin, "DROP TRIGGER sqlock_test_conflict");
  auto c = sqlock::connect("soci+" + db.dba());
  auto l = c.make_lock(unique_name("soci-conflict-after"), {.lease = 5s});
  EXPECT_TRUE(l.try_lock_for(5s));
}

INSTANTIATE_TEST_SUITE_P(errors, soci_conflict, ::testing::Values(1213, 1205),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return p.param == 1213 ? std::string("deadlock")
                                                  : std::string("lock_wait_timeout");
                         });

}  // namespace
}  // namespace sqlock::test
