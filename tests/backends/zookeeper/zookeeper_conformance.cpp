// The conformance suite on zookeeper:// (SQLOCK_TEST_ZOOKEEPER_URL, a standalone server), in
// sqlock's layout and in the peers' kazoo and curator-rw.
#include "conformance.hpp"

namespace sqlock::test {

struct zookeeper_standalone {
  static const char* url_var() { return "SQLOCK_TEST_ZOOKEEPER_URL"; }
  static std::string url(const std::string& base, const std::filesystem::path&) { return base; }
};

// The peers' layouts (docs/interop.md): sqlock's guarantees hold in them too.
struct zookeeper_kazoo {
  static const char* url_var() { return "SQLOCK_TEST_ZOOKEEPER_URL"; }
  static std::string url(const std::string& base, const std::filesystem::path&) {
    return base + "?compat=kazoo";
  }
  static constexpr bool znode_path_names = true;  // see odd_names_are_stored_verbatim
};

struct zookeeper_curator_rw {
  static const char* url_var() { return "SQLOCK_TEST_ZOOKEEPER_URL"; }
  static std::string url(const std::string& base, const std::filesystem::path&) {
    return base + "?compat=curator-rw";
  }
  static constexpr bool znode_path_names = true;
};

using zookeeper_types =
    ::testing::Types<zookeeper_standalone, zookeeper_kazoo, zookeeper_curator_rw>;
INSTANTIATE_TYPED_TEST_SUITE_P(zookeeper, conformance, zookeeper_types);

}  // namespace sqlock::test
