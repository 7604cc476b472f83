// The shared conformance suite on the skeleton backend (src/backends/example/): what a new
// backend copied from it starts from. Two stores: no latency, and a fake round trip of 1 ms.
#include <filesystem>
#include <string>

#include "conformance.hpp"

namespace sqlock::backends {
void register_example();  // src/backends/example/example_backend.cpp
}  // namespace sqlock::backends

namespace sqlock::test {

INSTANTIATE_TEST_SUITE_P(
    example, conformance,
    ::testing::Values(store_case{.label = "store",
                                 .url =
                                     [](const std::string&, const std::filesystem::path& tmp) {
                                       backends::register_example();
                                       return "example:" + tmp.filename().string();
                                     }},
                      store_case{.label = "store_with_round_trips",
                                 .url =
                                     [](const std::string&, const std::filesystem::path& tmp) {
                                       backends::register_example();
                                       return "example:" + tmp.filename().string() + "?latency=1ms";
                                     }}),
    store_label);

}  // namespace sqlock::test
