// The connection budget of a URL-opened SOCI backend (max_connections=, default 8): 16 and 50
// threads of one soci+postgresql client locking names of their own never have more sessions
// than the budget in pg_stat_activity (found by the client's application_name) and open none
// after warm-up.
#include <gtest/gtest.h>

#include "budget_load.hpp"
#include "soci_env.hpp"
#include "sqlock/backend.hpp"
#include "sqlock/client.hpp"

namespace sqlock::test {
namespace {

#ifdef SQLOCK_SOCI_POSTGRESQL
void stays_within_budget(int threads) {
  std::string base;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_POSTGRES_URL", base);
  const auto url = "soci+" + base;
  ensure_schema(url);
  const auto tag = unique_name("soci-budget");
  auto c = sqlock::connect(with_param(url, "application_name=" + tag));
  register_builtin_backends();
  auto watcher = std::dynamic_pointer_cast<sql::engine_backend>(make_backend(url));
  ASSERT_TRUE(watcher);
  const std::string sessions =
      "SELECT count(*), coalesce(max(backend_start)::text, '-') FROM pg_stat_activity "
      "WHERE application_name = '" +
      tag + "'";
  expect_within_budget(c, threads, tag, 8, [&] {
    sql::rows r;
    watcher->with_connection([&](sql::connection& conn) {
      r = conn.query(sessions, std::chrono::steady_clock::now() + std::chrono::seconds(5));
    });
    return budget_sample{std::stoi(r.at(0).at(0).value_or("0")), r.at(0).at(1).value_or("-")};
  });
}

TEST(soci_budget, sixteen_threads_of_one_client_stay_within_the_default_budget) {
  stays_within_budget(16);
}

TEST(soci_budget, fifty_threads_of_one_client_stay_within_the_default_budget) {
  stays_within_budget(50);
}
#endif

}  // namespace
}  // namespace sqlock::test
