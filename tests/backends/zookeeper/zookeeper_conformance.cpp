// The conformance suite on zookeeper:// (SQLOCK_TEST_ZOOKEEPER_URL, a standalone server), in
// sqlock's layout and in the peers' kazoo and curator-rw.
#include <filesystem>
#include <string>

#include "conformance.hpp"

namespace sqlock::test {

INSTANTIATE_TEST_SUITE_P(
    zookeeper, conformance,
    ::testing::Values(
        store_case{.label = "standalone", .url_var = "SQLOCK_TEST_ZOOKEEPER_URL", .url = same_url},
        // The peers' layouts (docs/interop.md): sqlock's guarantees hold in them too.
        store_case{.label = "kazoo",
                   .url_var = "SQLOCK_TEST_ZOOKEEPER_URL",
                   .url = [](const std::string& base,
                             const std::filesystem::path&) { return base + "?compat=kazoo"; },
                   .znode_path_names = true},
        store_case{.label = "curator_rw",
                   .url_var = "SQLOCK_TEST_ZOOKEEPER_URL",
                   .url = [](const std::string& base,
                             const std::filesystem::path&) { return base + "?compat=curator-rw"; },
                   .znode_path_names = true}),
    store_label);

}  // namespace sqlock::test
