// The shared conformance suite on MySQL/MariaDB, in every mode and ShedLock's layout.
// SQLOCK_TEST_MYSQL_URL names a user that may migrate; the schema is migrated once by the
// environment below.
#include "conformance.hpp"
#include "mysql_env.hpp"
#include "shedlock_table.hpp"

namespace sqlock::test {

template <const char* Mode>
struct mysql_mode {
  static const char* url_var() { return "SQLOCK_TEST_MYSQL_URL"; }
  static std::string url(const std::string& base, const std::filesystem::path&) {
    ensure_mysql_schema(base);
    return with_param(base, "mode", Mode);
  }
};

inline constexpr char pessimistic[] = "pessimistic";
inline constexpr char optimistic[] = "optimistic";
inline constexpr char advisory[] = "advisory";

/// compat=shedlock: ShedLock's table and rules (docs/interop.md).
struct mysql_shedlock {
  static constexpr std::size_t max_name_chars = 64;
  static const char* url_var() { return "SQLOCK_TEST_MYSQL_URL"; }
  static std::string url(const std::string& base, const std::filesystem::path&) {
    return shedlock_layout(base);
  }
};

using mysql_types = ::testing::Types<mysql_mode<pessimistic>, mysql_mode<optimistic>,
                                     mysql_mode<advisory>, mysql_shedlock>;
INSTANTIATE_TYPED_TEST_SUITE_P(mysql, conformance, mysql_types);

}  // namespace sqlock::test
