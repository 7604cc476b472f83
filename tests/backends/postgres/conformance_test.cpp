// The shared conformance suite on PostgreSQL: pessimistic mode as the schema owner, optimistic
// and advisory modes as the EXECUTE-only role (so the whole suite also proves that role needs
// nothing but EXECUTE); and ShedLock's layout (compat=shedlock).
#include "conformance.hpp"
#include "pg_env.hpp"
#include "shedlock_table.hpp"

namespace sqlock::test {

struct pg_pessimistic {
  static const char* url_var() { return pg::url_var; }
  static std::string url(const std::string& base, const std::filesystem::path&) {
    pg::ensure_migrated();
    return pg::with(base, "mode=pessimistic");
  }
};

struct pg_optimistic_app_role {
  static const char* url_var() { return pg::app_url_var; }
  static std::string url(const std::string& base, const std::filesystem::path&) {
    pg::ensure_migrated();
    return pg::with(base, "mode=optimistic");
  }
};

struct pg_advisory_app_role {
  static const char* url_var() { return pg::app_url_var; }
  static std::string url(const std::string& base, const std::filesystem::path&) {
    pg::ensure_migrated();
    return pg::with(base, "mode=advisory");
  }
};

/// compat=shedlock: ShedLock's table and rules (docs/interop.md), as the schema owner.
struct pg_shedlock {
  static constexpr std::size_t max_name_chars = 64;
  static const char* url_var() { return pg::url_var; }
  static std::string url(const std::string& base, const std::filesystem::path&) {
    return shedlock_layout(base);
  }
};

using pg_types =
    ::testing::Types<pg_pessimistic, pg_optimistic_app_role, pg_advisory_app_role, pg_shedlock>;
INSTANTIATE_TYPED_TEST_SUITE_P(postgres, conformance, pg_types);

}  // namespace sqlock::test
