// A deadlock (MySQL error 1213) or lock-wait timeout (1205) that an acquire still meets when a
// try_lock_for's deadline runs out: the call returns false (not obtained in time), as for any
// contention at the deadline, and leaves nothing behind — no row held, no GET_LOCK lock taken,
// and the next acquire of the name succeeds. The conflict is provoked on every attempt, in a
// database of the test's own, where a real one would come: in the row modes by a trigger on
// the acquire's write of the hold into the name's row (inside its transaction, the row maybe
// inserted by it just before); in advisory mode by sqlock_rows_hold replaced with a function
// that fails after the session took the name's GET_LOCK lock, and one level of it more, as a
// deadlock inside a stored function leaves it when MariaDB skips the function's handler.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "mysql_env.hpp"
#include "own_database.hpp"
#include "sqlock/client.hpp"
#include "test_env.hpp"

namespace sqlock::test {
namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

// SIGNAL of the error `code` (1213: deadlock, SQLSTATE 40001; 1205: lock wait timeout).
std::string signal_of(int code) {
  return std::string("SIGNAL SQLSTATE '") + (code == 1213 ? "40001" : "HY000") +
         "' SET MYSQL_ERRNO = " + std::to_string(code) + ", MESSAGE_TEXT = 'sqlock test conflict'";
}

// The definition of routine `name` (PROCEDURE or FUNCTION), to put back at the end.
std::string definition_of(sql::engine_backend& b, const std::string& type,
                          const std::string& name) {
  auto r = query(b, "SHOW CREATE " + type + " " + name);
  if (r.empty() || r[0].size() < 3 || !r[0][2]) throw error("no definition of " + name);
  return *r[0][2];
}

class mysql_conflict : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    std::string dba_url;
    SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_DBA_URL", dba_url);
    db_ = std::make_unique<own_database>(dba_url);
    sqlock::connect(db_->dba() + "?migrate=auto");
    admin_ = raw_backend(db_->dba());
  }

  // try_lock_for(400ms) of `name` in `mode` while every attempt fails with the conflict:
  // false, and only once the deadline has run out (the conflict was retried until then).
  void expect_not_obtained(client& c, const std::string& name) {
    auto l = c.make_lock(name, {.lease = 5s});
    const auto start = clock::now();
    bool got = true;
    ASSERT_NO_THROW(got = l.try_lock_for(400ms));
    const auto took = clock::now() - start;
    EXPECT_FALSE(got);
    EXPECT_GE(took, 390ms);
    EXPECT_LT(took, 10s);
  }

  std::unique_ptr<own_database> db_;
  std::shared_ptr<sql::engine_backend> admin_;
};

TEST_P(mysql_conflict, a_row_mode_acquire_failing_at_the_deadline_is_not_obtained) {
  // The acquire's write of the hold into the name's row fails, as a conflict with another
  // transaction would there.
  query(*admin_,
        "CREATE TRIGGER sqlock_test_conflict BEFORE UPDATE ON sqlock_locks FOR EACH ROW BEGIN "
        "IF NEW.owner <> '' AND OLD.owner = '' THEN " +
            signal_of(GetParam()) + "; END IF; END");
  std::vector<client> clients;
  for (const char* mode : {"pessimistic", "optimistic"}) {
    SCOPED_TRACE(mode);
    auto& c = clients.emplace_back(sqlock::connect(with_param(db_->dba(), "mode", mode)));
    const auto name = unique_name("my-conflict");
    expect_not_obtained(c, name);
    // The acquire's transaction was rolled back: the name's row (if its first insert stayed)
    // is free, and no writer mark of the waiting call is left.
    EXPECT_EQ(single(query(*admin_, "SELECT COUNT(*) FROM sqlock_locks WHERE name = '" + name +
                                        "' AND owner <> ''")),
              "0");
    EXPECT_EQ(single(query(*admin_,
                           "SELECT COUNT(*) FROM sqlock_writer_marks WHERE name_key = "
                           "sqlock_key('" +
                               name + "')")),
              "0");
  }
  query(*admin_, "DROP TRIGGER sqlock_test_conflict");
  // The same clients' pooled connections, which met the conflicts, carry no transaction left
  // open: their next acquires go through.
  for (auto& c : clients) {
    auto l = c.make_lock(unique_name("my-conflict-after"), {.lease = 5s});
    ASSERT_TRUE(l.try_lock_for(5s));
    EXPECT_GT(l.fence(), 0u);
    l.unlock();
  }
}

TEST_P(mysql_conflict, an_advisory_acquire_failing_at_the_deadline_leaves_no_get_lock_held) {
  auto adv = sqlock::connect(with_param(db_->dba(), "mode", "advisory"));
  const auto name = unique_name("my-conflict-adv");
  {
    // A row-mode hold of the name lists it (sqlock_row_names): advisory acquires of it then
    // look at the rows (sqlock_rows_hold).
    auto rows = sqlock::connect(with_param(db_->dba(), "mode", "pessimistic"));
    auto l = rows.make_lock(name, {.lease = 5s});
    ASSERT_TRUE(l.try_lock_for(5s));
    l.unlock();
  }
  const std::string look = definition_of(*admin_, "FUNCTION", "sqlock_rows_hold");
  query(*admin_, "DROP FUNCTION sqlock_rows_hold");
  query(*admin_,
        "CREATE FUNCTION sqlock_rows_hold(p_key VARBINARY(255)) RETURNS INT NOT DETERMINISTIC "
        "READS SQL DATA SQL SECURITY INVOKER BEGIN "
        "DO GET_LOCK(sqlock_lock_name(CAST(p_key AS CHAR CHARACTER SET utf8mb4)), 0); " +
            signal_of(GetParam()) + "; RETURN 0; END");
  expect_not_obtained(adv, name);
  EXPECT_EQ(single(query(*admin_, "SELECT IS_USED_LOCK(sqlock_lock_name('" + name + "'))")), "NULL")
      << "a session still holds the name's GET_LOCK lock";
  query(*admin_, "DROP FUNCTION sqlock_rows_hold");
  query(*admin_, look);
  // The same client takes the name now (its sessions are clean), and another mode sees it.
  auto l = adv.make_lock(name, {.lease = 5s});
  ASSERT_TRUE(l.try_lock_for(5s));
  auto rows = sqlock::connect(with_param(db_->dba(), "mode", "pessimistic"));
  EXPECT_FALSE(rows.make_lock(name).try_lock());
  l.unlock();
}

// The test name of an error number.
std::string conflict_name(const ::testing::TestParamInfo<int>& p) {
  return p.param == 1213 ? "deadlock" : "lock_wait_timeout";
}

INSTANTIATE_TEST_SUITE_P(errors, mysql_conflict, ::testing::Values(1213, 1205), conflict_name);

}  // namespace
}  // namespace sqlock::test
