// Shared and permit holds through SOCI: the row_kinds suite on soci+sqlite3 (both modes) and,
// when built with them, soci+postgresql (in the schema sqlock_kinds, as the PostgreSQL
// backend's tests use it: the shared `sqlock` schema is left alone) and soci+mysql.
#include "row_kinds_suite.hpp"
#include "soci_env.hpp"

namespace sqlock::test {
namespace {

std::string sqlite_url(const char* mode) {
  static const temp_dir dir;
  return "soci+sqlite3:" + (dir.path / "kinds.db").string() + "?mode=" + mode;
}

// A server URL of the native backends' tests as soci+, migrated once, in `mode`.
std::string server_url(const char* var, const std::string& extra, const char* mode) {
  auto base = soci_url(var);
  if (base.empty()) return {};
  if (!extra.empty()) base = with_param(base, extra);
  ensure_schema(base);
  return with_param(base, std::string("mode=") + mode);
}

std::vector<kinds_target> targets() {
  std::vector<kinds_target> v{{"sqlite3_pessimistic", [] { return sqlite_url("pessimistic"); }},
                              {"sqlite3_optimistic", [] { return sqlite_url("optimistic"); }}};
#ifdef SQLOCK_SOCI_POSTGRESQL
  v.push_back(
      {"postgresql_pessimistic",
       [] { return server_url("SQLOCK_TEST_POSTGRES_URL", "schema=sqlock_kinds", "pessimistic"); },
       4});
#endif
#ifdef SQLOCK_SOCI_MYSQL
  v.push_back({"mysql_optimistic",
               [] { return server_url("SQLOCK_TEST_MYSQL_URL", "", "optimistic"); }, 4});
#endif
  return v;
}

INSTANTIATE_TEST_SUITE_P(soci, row_kinds, ::testing::ValuesIn(targets()), kinds_label);

}  // namespace
}  // namespace sqlock::test
