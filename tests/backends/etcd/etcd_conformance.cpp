// The shared conformance suite on one etcd member and on a 3-member cluster.
#include "conformance.hpp"

namespace sqlock::test {

struct etcd_single {
  static const char* url_var() { return "SQLOCK_TEST_ETCD_URL"; }
  static std::string url(const std::string& base, const std::filesystem::path&) { return base; }
};

struct etcd_cluster {
  static const char* url_var() { return "SQLOCK_TEST_ETCD_CLUSTER_URL"; }
  static std::string url(const std::string& base, const std::filesystem::path&) { return base; }
};

using etcd_types = ::testing::Types<etcd_single, etcd_cluster>;
INSTANTIATE_TYPED_TEST_SUITE_P(etcd, conformance, etcd_types);

}  // namespace sqlock::test
