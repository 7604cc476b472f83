// The shared conformance suite through SOCI: soci+sqlite3 (a fresh file per test), and
// soci+postgresql / soci+mysql on the native backends' test servers, in both lease modes.
#include <soci/soci.h>

#include <filesystem>
#include <string>
#include <vector>

#include "conformance.hpp"
#include "soci_env.hpp"
#include "sqlock/soci/soci.hpp"

namespace sqlock::test {

namespace {

constexpr const char* postgres_var = "SQLOCK_TEST_POSTGRES_URL";
constexpr const char* mysql_var = "SQLOCK_TEST_MYSQL_URL";

// soci+sqlite3 in `mode`, a fresh file per test.
store_case sqlite3_in(const std::string& mode) {
  return store_case{.label = "sqlite3_" + mode,
                    .url = [mode](const std::string&, const std::filesystem::path& tmp) {
                      return "soci+sqlite3:" + (tmp / "locks.db").string() + "?mode=" + mode;
                    }};
}

// soci+ the native backend's test server at `var`, in `mode`.
store_case server_in(const std::string& db, const char* var, const std::string& mode) {
  return store_case{.label = db + "_" + mode,
                    .url_var = var,
                    .url = [mode](const std::string& base, const std::filesystem::path&) {
                      return with_param("soci+" + base, "mode=" + mode);
                    }};
}

}  // namespace

// The servers' schema is created once, before the suites run (clients only check it).
class migrate_servers : public ::testing::Environment {
 public:
  void SetUp() override {
    for (const char* var : {postgres_var, mysql_var}) {
#ifndef SQLOCK_SOCI_POSTGRESQL
      if (std::string(var) == postgres_var) continue;
#endif
#ifndef SQLOCK_SOCI_MYSQL
      if (std::string(var) == mysql_var) continue;
#endif
      auto u = soci_url(var);
      if (u.empty()) continue;
      ensure_schema(u);
    }
  }
};
const auto* const migrate_env = ::testing::AddGlobalTestEnvironment(new migrate_servers);

// soci+sqlite3, then soci+postgresql and soci+mysql where built, in both lease modes.
std::vector<store_case> soci_cases() {
  std::vector<store_case> v{sqlite3_in("pessimistic"), sqlite3_in("optimistic")};
#ifdef SQLOCK_SOCI_POSTGRESQL
  v.push_back(server_in("postgresql", postgres_var, "pessimistic"));
  v.push_back(server_in("postgresql", postgres_var, "optimistic"));
#endif
#ifdef SQLOCK_SOCI_MYSQL
  v.push_back(server_in("mysql", mysql_var, "pessimistic"));
  v.push_back(server_in("mysql", mysql_var, "optimistic"));
#endif
  return v;
}

INSTANTIATE_TEST_SUITE_P(soci, conformance, ::testing::ValuesIn(soci_cases()), store_label);

}  // namespace sqlock::test
