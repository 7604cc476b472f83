// The shared conformance suite on one etcd member and on a 3-member cluster over gRPC (the
// default wire), and on one member through the JSON gateway (`transport=json`).
#include "conformance.hpp"

namespace sqlock::test {

struct etcd_single {
  static const char* url_var() { return "SQLOCK_TEST_ETCD_URL"; }
  static constexpr std::chrono::milliseconds lease_floor{2000};  // TTLs: whole seconds, >= ~2 s
  static std::string url(const std::string& base, const std::filesystem::path&) { return base; }
};

struct etcd_cluster {
  static const char* url_var() { return "SQLOCK_TEST_ETCD_CLUSTER_URL"; }
  static constexpr std::chrono::milliseconds lease_floor{2000};
  static std::string url(const std::string& base, const std::filesystem::path&) { return base; }
};

struct etcd_single_json {
  static const char* url_var() { return "SQLOCK_TEST_ETCD_URL"; }
  static constexpr std::chrono::milliseconds lease_floor{2000};
  static std::string url(const std::string& base, const std::filesystem::path&) {
    return base + (base.find('?') == std::string::npos ? "?" : "&") + "transport=json";
  }
};

using etcd_types = ::testing::Types<etcd_single, etcd_cluster, etcd_single_json>;
INSTANTIATE_TYPED_TEST_SUITE_P(etcd, conformance, etcd_types);

}  // namespace sqlock::test
