// The shared conformance suite on PostgreSQL: pessimistic mode as the schema owner, optimistic
// and advisory modes as the EXECUTE-only role (so the whole suite also proves that role needs
// nothing but EXECUTE).
#include "conformance.hpp"
#include "pg_env.hpp"

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

using pg_types = ::testing::Types<pg_pessimistic, pg_optimistic_app_role, pg_advisory_app_role>;
INSTANTIATE_TYPED_TEST_SUITE_P(postgres, conformance, pg_types);

}  // namespace sqlock::test
