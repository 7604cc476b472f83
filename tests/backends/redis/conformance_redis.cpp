// The shared conformance suite on one Redis server (redis://) and on Redlock over five
// independent masters (redlock://).
#include "conformance.hpp"

namespace sqlock::test {

struct redis_single {
  static const char* url_var() { return "SQLOCK_TEST_REDIS_URL"; }
  static std::string url(const std::string& base, const std::filesystem::path&) { return base; }
};

struct redis_redlock {
  static const char* url_var() { return "SQLOCK_TEST_REDLOCK_URL"; }
  static std::string url(const std::string& base, const std::filesystem::path&) { return base; }
};

using redis_types = ::testing::Types<redis_single, redis_redlock>;
INSTANTIATE_TYPED_TEST_SUITE_P(redis, conformance, redis_types);

}  // namespace sqlock::test
