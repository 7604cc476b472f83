// Shared and permit holds of PostgreSQL's row modes: the row_kinds suite as the schema owner and
// as the EXECUTE-only role, and the upgrade from schema version 3 with a hold live. Everything
// runs in schemas of its own (sqlock_kinds, and a fresh one per upgrade test): the migrations
// this needs are not applied to the shared `sqlock` schema other test programs use.
#include <pqxx/pqxx>

#include "backends/postgres/dialect.hpp"
#include "pg_env.hpp"
#include "row_kinds_suite.hpp"
#include "sqlock/backend.hpp"

namespace sqlock::test {
namespace {

constexpr const char* kinds_schema = "sqlock_kinds";

// The owner's URL of the kinds schema, migrated once per process; the EXECUTE-only role is
// made a member of the schema's execute role.
std::string kinds_url(const char* mode, bool app) {
  auto owner = env(pg::url_var);
  auto app_url = env(pg::app_url_var);
  if (owner.empty() || app_url.empty()) return {};
  static std::once_flag once;
  std::call_once(once, [&] {
    schema_of(*make_backend(pg::with(owner, std::string("schema=") + kinds_schema))).migrate();
    // (Never `sqlock`: the shared schema stays at the version the other programs expect.)
    pqxx::connection c(owner);
    pqxx::work w(c);
    pqxx::connection app_session(app_url);
    const std::string app_role = app_session.username();
    w.exec("GRANT " + std::string(kinds_schema) + "_execute TO " + w.quote_name(app_role));
    w.commit();
  });
  return pg::with(app ? app_url : owner, std::string("schema=") + kinds_schema + "&mode=" + mode);
}

INSTANTIATE_TEST_SUITE_P(
    postgres, row_kinds,
    ::testing::Values(
        kinds_target{"pessimistic", [] { return kinds_url("pessimistic", false); }, 6},
        kinds_target{"optimistic", [] { return kinds_url("optimistic", false); }, 6},
        kinds_target{"app_pessimistic", [] { return kinds_url("pessimistic", true); }, 4}),
    kinds_label);

// A database at schema version 3 (the wave-1 schema) with an exclusive hold written as its
// acquire_pessimistic() wrote it; `sqlock migrate` runs with the hold live.
TEST(postgres_kinds, UpgradeFromVersion3KeepsALiveHold) {
  std::string owner_, app_;
  SQLOCK_REQUIRE_URL(pg::url_var, owner_);
  SQLOCK_REQUIRE_URL(pg::app_url_var, app_);
  kinds_url("pessimistic", false);  // the app role is a member of sqlock_kinds_execute
  const std::string schema = "sqlock_up_" + random_token().substr(0, 8);
  const auto& b = sqlock::postgres::bundle();
  {
    pqxx::connection c(owner_);
    for (const auto& m : b.migrations) {
      if (sql::migration_version(m.name) > 3) break;
      pqxx::work w(c);
      w.exec(sqlock::postgres::render(m.text, schema, "sqlock_kinds_execute"));
      w.commit();
    }
  }
  const std::string owner = random_token();
  std::uint64_t fence = 0;
  {
    pqxx::connection c(owner_);
    pqxx::work w(c);
    fence = w.exec1("INSERT INTO " + schema +
                    ".locks (name, owner, mode, fence, version, acquired_at, "
                    "expires_at, holder) VALUES ('job', " +
                    w.quote(owner) + ", 'pessimistic', nextval('" + schema +
                    ".fence_seq'), 1, clock_timestamp(), clock_timestamp() + interval '60 s', "
                    "'wave1') RETURNING fence")[0]
                .as<std::uint64_t>();
    w.commit();
  }
  const std::string url =
      pg::with(owner_, "schema=" + schema + "&execute_role=sqlock_kinds_execute");
  auto be = make_backend(url);
  EXPECT_GE(schema_of(*be).migrate(), 5);
  auto app =
      make_backend(pg::with(app_, "schema=" + schema + "&execute_role=sqlock_kinds_execute"));

  expect_hold_survived_upgrade(*app, "job", owner, fence);

  pqxx::connection c(owner_);
  pqxx::work w(c);
  w.exec("DROP SCHEMA " + schema + " CASCADE");
  w.commit();
}

}  // namespace
}  // namespace sqlock::test
