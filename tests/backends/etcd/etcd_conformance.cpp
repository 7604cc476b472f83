// The shared conformance suite on one etcd member and on a 3-member cluster over gRPC (the
// default wire), on one member through the JSON gateway (`transport=json`), and on one member
// with releases that do not wait (`release=async`).
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
                                       return url_with(base, "transport=json");
                                     },
                                 .lease_floor = ttl_floor},
                      // release=async (docs/backends/etcd.md): unlock() returns once the key's
                      // deletion is handed over, so another client may find the lock busy for a
                      // moment after it; the suite then waits briefly for it.
                      store_case{.label = "async_release",
                                 .url_var = "SQLOCK_TEST_ETCD_URL",
                                 .url =
                                     [](const std::string& base, const std::filesystem::path&) {
                                       return url_with(base, "release=async");
                                     },
                                 .release_async = true,
                                 .lease_floor = ttl_floor}),
    store_label);

}  // namespace sqlock::test
