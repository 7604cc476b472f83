// The shared conformance suite on the skeleton backend (src/backends/example/): what a new
// backend copied from it starts from. Two stores: no latency, and a fake round trip of 1 ms.
#include "conformance.hpp"

namespace sqlock::backends {
void register_example();  // src/backends/example/example_backend.cpp
}  // namespace sqlock::backends

namespace sqlock::test {

struct example_store {
  static const char* url_var() { return nullptr; }
  static std::string url(const std::string&, const std::filesystem::path& tmp) {
    backends::register_example();
    return "example:" + tmp.filename().string();
  }
};

struct example_store_with_round_trips {
  static const char* url_var() { return nullptr; }
  static std::string url(const std::string&, const std::filesystem::path& tmp) {
    backends::register_example();
    return "example:" + tmp.filename().string() + "?latency=1ms";
  }
};

using example_types = ::testing::Types<example_store, example_store_with_round_trips>;
INSTANTIATE_TYPED_TEST_SUITE_P(example, conformance, example_types);

}  // namespace sqlock::test
