// Read-only PostgreSQL servers: a URL that reaches a hot standby (the shared test server's
// standby, scripts/servers.d/12-postgres_standby.sh) is refused at connect with a
// read_only_error naming the server, in every mode; a row-mode hold whose server turned
// read-only (a login role of the test's own made read-only by default, its sessions ended) is
// reported lost at its next renewal instead of at the end of its lease.
#include <gtest/gtest.h>

#include <chrono>

#include "pg_env.hpp"
#include "sqlock/backend.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/random.hpp"

namespace sqlock::test {
namespace {

using namespace std::chrono_literals;

TEST_F(postgres, a_hot_standby_is_refused_naming_the_server_in_every_mode) {
  std::string standby;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_POSTGRES_STANDBY_URL", standby);
  const auto port = standby.substr(standby.rfind(':') + 1, 5);  // "25433" of ...:25433/sqlock
  for (const char* mode : {"pessimistic", "optimistic", "advisory"}) {
    SCOPED_TRACE(mode);
    try {
      sqlock::connect(pg::with(standby, std::string("mode=") + mode));
      ADD_FAILURE() << "connected to a hot standby";
    } catch (const read_only_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("127.0.0.1:" + port + " is a hot standby"), std::string::npos) << what;
      EXPECT_NE(what.find("target_session_attrs=read-write"), std::string::npos) << what;
      EXPECT_EQ(what.find("sqlock_owner:sqlock_owner"), std::string::npos) << what;
      EXPECT_EQ(e.code(), "25006");
    }
  }
}

TEST_F(postgres, a_row_hold_whose_server_turned_read_only_is_lost_at_its_next_renewal) {
  role_guard role(owner_, "sqlock_ro_" + random_token().substr(0, 10));
  auto c = sqlock::connect(pg::with(as_user(app_, role.name(), role.name()), "mode=pessimistic"));
  // A 9 s lease renews every 3 s; without the read-only answer the renewals would fail as
  // unknown until the lease ran out (~8 s).
  auto m = c.make_lock(unique_name("read-only"), {.lease = 9s});
  ASSERT_TRUE(m.try_lock_for(10s));
  role.set("default_transaction_read_only", "on");
  role.terminate_sessions();  // the next session of the pool is read-only
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(eventually([&] { return m.lost(); }, 20s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 6s) << "lost only at the lease's end";
  m.unlock();
}

}  // namespace
}  // namespace sqlock::test
