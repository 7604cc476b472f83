// The conformance suite on zookeeper:// (SQLOCK_TEST_ZOOKEEPER_URL, a standalone server).
#include "conformance.hpp"

namespace sqlock::test {

struct zookeeper_standalone {
  static const char* url_var() { return "SQLOCK_TEST_ZOOKEEPER_URL"; }
  static std::string url(const std::string& base, const std::filesystem::path&) { return base; }
};

using zookeeper_types = ::testing::Types<zookeeper_standalone>;
INSTANTIATE_TYPED_TEST_SUITE_P(zookeeper, conformance, zookeeper_types);

}  // namespace sqlock::test
