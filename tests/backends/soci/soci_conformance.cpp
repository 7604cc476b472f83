// The shared conformance suite through SOCI: soci+sqlite3 (a fresh file per test), and
// soci+postgresql / soci+mysql on the native backends' test servers, in both lease modes.
#include <soci/soci.h>

#include "conformance.hpp"
#include "soci_env.hpp"
#include "sqlock/soci/soci.hpp"

namespace sqlock::test {

template <const char* Mode>
struct soci_sqlite3 {
  static const char* url_var() { return nullptr; }
  static std::string url(const std::string&, const std::filesystem::path& tmp) {
    return "soci+sqlite3:" + (tmp / "locks.db").string() + "?mode=" + Mode;
  }
};

template <const char* Var, const char* Mode>
struct soci_server {
  static const char* url_var() { return Var; }
  static std::string url(const std::string& base, const std::filesystem::path&) {
    return with_param("soci+" + base, std::string("mode=") + Mode);
  }
};

inline constexpr char pessimistic[] = "pessimistic";
inline constexpr char optimistic[] = "optimistic";
inline constexpr char postgres_var[] = "SQLOCK_TEST_POSTGRES_URL";
inline constexpr char mysql_var[] = "SQLOCK_TEST_MYSQL_URL";

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

using soci_types =
    ::testing::Types<soci_sqlite3<pessimistic>, soci_sqlite3<optimistic>
#ifdef SQLOCK_SOCI_POSTGRESQL
                     ,
                     soci_server<postgres_var, pessimistic>, soci_server<postgres_var, optimistic>
#endif
#ifdef SQLOCK_SOCI_MYSQL
                     ,
                     soci_server<mysql_var, pessimistic>, soci_server<mysql_var, optimistic>
#endif
                     >;
INSTANTIATE_TYPED_TEST_SUITE_P(soci, conformance, soci_types);

}  // namespace sqlock::test
