// The shared conformance suite on one Redis server (redis://) and on Redlock over five
// independent masters (redlock://), each in sqlock's layout and in the peers' (compat=plain), and
// with releases that do not wait (release=async).
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

// compat=plain, the peers' layout (docs/interop.md): the same guarantees without fences.
struct redis_plain_layout {
  static const char* url_var() { return "SQLOCK_TEST_REDIS_URL"; }
  static std::string url(const std::string& base, const std::filesystem::path&) {
    return base + "?compat=plain";
  }
};

struct redlock_plain_layout {
  static const char* url_var() { return "SQLOCK_TEST_REDLOCK_URL"; }
  static std::string url(const std::string& base, const std::filesystem::path&) {
    return base + "?compat=plain";
  }
};

// release=async (docs/backends/redis.md): unlock() returns once the release is sent, so another
// client may find the lock busy for a moment after it; the suite then waits briefly for it.
struct redis_async_release {
  static const char* url_var() { return "SQLOCK_TEST_REDIS_URL"; }
  static std::string url(const std::string& base, const std::filesystem::path&) {
    return base + "?release=async";
  }
  static constexpr bool release_async = true;
};

struct redlock_async_release {
  static const char* url_var() { return "SQLOCK_TEST_REDLOCK_URL"; }
  static std::string url(const std::string& base, const std::filesystem::path&) {
    return base + "?release=async";
  }
  static constexpr bool release_async = true;
};

using redis_types =
    ::testing::Types<redis_single, redis_redlock, redis_plain_layout, redlock_plain_layout,
                     redis_async_release, redlock_async_release>;
INSTANTIATE_TYPED_TEST_SUITE_P(redis, conformance, redis_types);

}  // namespace sqlock::test
