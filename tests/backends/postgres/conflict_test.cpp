// A deadlock (SQLSTATE 40P01) or serialization failure (40001) that an acquire still meets when
// a try_lock_for's deadline runs out: the call returns false (not obtained in time), as for any
// contention at the deadline, and leaves nothing behind: no row held, no advisory lock of the
// name kept by a session (a session-level advisory lock survives the rollback of the statement
// that took it). The conflict is raised on every attempt by a function replaced, in a schema of
// the test's own: audit_on(), which the row modes' acquire calls after writing the row, and
// rows_hold(), which advisory mode calls once its session holds the name's key.
#include <gtest/gtest.h>

#include <chrono>
#include <pqxx/pqxx>
#include <string>

#include "pg_env.hpp"
#include "sqlock/client.hpp"

namespace sqlock::test {
namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

class postgres_conflict : public postgres, public ::testing::WithParamInterface<const char*> {
 protected:
  // Replaces `signature` in the test's schema by a function that raises the SQLSTATE.
  void make_it_fail(const std::string& signature) {
    pqxx::connection c(owner_);
    pqxx::nontransaction tx(c);
    tx.exec("CREATE OR REPLACE FUNCTION " + schema_ + "." + signature +
            " RETURNS boolean LANGUAGE plpgsql AS $f$ BEGIN RAISE EXCEPTION 'sqlock test "
            "conflict' USING ERRCODE = '" +
            GetParam() + "'; END $f$");
  }
  // Puts every function back (`sqlock migrate` re-creates the routines).
  void restore() { sqlock::connect(pg::with(schema_owner_, "migrate=auto")); }

  // try_lock_for(400ms) of `name` while every attempt fails with the conflict: false, without
  // an exception, once the deadline has run out. The client's tries are patient_tries(): its
  // first one opens a connection (advisory mode: a session), which under load took longer
  // than 250 ms and threw a time-out.
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

  std::string count(const std::string& query, const std::string& name) {
    pqxx::connection c(owner_);
    pqxx::nontransaction tx(c);
    return tx.exec_params1(query, name)[0].as<std::string>();
  }

  void SetUp() override {
    postgres::SetUp();
    if (IsSkipped()) return;
    schema_ = "sqlock_cf_" + random_token().substr(0, 8);
    for (auto& ch : schema_)
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') ch = 'x';
    guard_ = std::make_unique<schema_guard>(owner_, schema_);
    schema_owner_ = pg::with(owner_, "schema=" + schema_);
    restore();
  }

  std::string schema_, schema_owner_;
  std::unique_ptr<schema_guard> guard_;
};

TEST_P(postgres_conflict, a_row_mode_acquire_failing_at_the_deadline_is_not_obtained) {
  make_it_fail("audit_on()");
  for (const char* mode : {"pessimistic", "optimistic"}) {
    SCOPED_TRACE(mode);
    auto c = sqlock::connect(pg::with(schema_owner_, std::string("mode=") + mode), patient_tries());
    const auto name = unique_name("pg-conflict");
    expect_not_obtained(c, name);
    EXPECT_EQ(
        count("SELECT count(*) FROM " + schema_ + ".locks WHERE name = $1 AND owner IS NOT NULL",
              name),
        "0");
  }
  restore();
  for (const char* mode : {"pessimistic", "optimistic"}) {
    auto c = sqlock::connect(pg::with(schema_owner_, std::string("mode=") + mode));
    auto l = c.make_lock(unique_name("pg-conflict-after"), {.lease = 5s});
    ASSERT_TRUE(l.try_lock_for(5s)) << mode;
    l.unlock();
  }
}

TEST_P(postgres_conflict, an_advisory_acquire_failing_at_the_deadline_keeps_no_key) {
  const auto name = unique_name("pg-conflict-adv");
  // A row-mode hold of the name: advisory acquires of it then call rows_hold().
  auto rows = sqlock::connect(pg::with(schema_owner_, "mode=pessimistic"));
  auto held = rows.make_lock(name, {.lease = 10s});
  ASSERT_TRUE(held.try_lock_for(5s));
  make_it_fail("rows_hold(p_name text, p_exclusive boolean)");
  auto adv = sqlock::connect(pg::with(schema_owner_, "mode=advisory"), patient_tries());
  expect_not_obtained(adv, name);
  EXPECT_EQ(count("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 "
                  "AND ((classid::bigint << 32) | objid::bigint) = " +
                      schema_ + ".lock_key($1)",
                  name),
            "0")
      << "a session still holds the name's advisory key";
  held.unlock();
  restore();
  auto again = sqlock::connect(pg::with(schema_owner_, "mode=advisory"));
  auto l = again.make_lock(name, {.lease = 5s});
  ASSERT_TRUE(l.try_lock_for(5s));
  l.unlock();
}

// The test name of a SQLSTATE.
std::string pg_conflict_name(const ::testing::TestParamInfo<const char*>& p) {
  return std::string(p.param) == "40P01" ? "deadlock" : "serialization_failure";
}

INSTANTIATE_TEST_SUITE_P(errors, postgres_conflict, ::testing::Values("40P01", "40001"),
                         pg_conflict_name);

}  // namespace
}  // namespace sqlock::test
