// The shared conformance suite on one etcd member and on a 3-member cluster over gRPC (the
// default wire), and on one member through the JSON gateway (`transport=json`).
#include <chrono>
#include <filesystem>
#include <string>

#include "conformance.hpp"

namespace sqlock::test {
namespace {

constexpr std::chrono::milliseconds ttl_floor{2000};  // TTLs: whole seconds, >= ~2 s

}  // namespace

INSTANTIATE_TEST_SUITE_P(
    etcd, conformance,
    ::testing::Values(store_case{.label = "single",
                                 .url_var = "SQLOCK_TEST_ETCD_URL",
                                 .url = same_url,
                                 .lease_floor = ttl_floor},
                      store_case{.label = "cluster",
                                 .url_var = "SQLOCK_TEST_ETCD_CLUSTER_URL",
                                 .url = same_url,
                                 .lease_floor = ttl_floor},
                      store_case{.label = "single_json",
                                 .url_var = "SQLOCK_TEST_ETCD_URL",
                                 .url =
                                     [](const std::string& base, const std::filesystem::path&) {
                                       return base +
                                              (base.find('?') == std::string::npos ? "?" : "&") +
                                              "transport=json";
                                     },
                                 .lease_floor = ttl_floor}),
    store_label);

}  // namespace sqlock::test
