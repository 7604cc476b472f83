// The shared conformance suite on one Redis server (redis://) and on Redlock over five
// independent masters (redlock://), each in sqlock's layout and in the peers' (compat=plain), and
// with releases that do not wait (release=async).
#include <filesystem>
#include <string>

#include "conformance.hpp"

namespace sqlock::test {
namespace {

// The store at the server URL with `query` appended.
store_case::url_type with(std::string query) {
  return
      [query](const std::string& base, const std::filesystem::path&) { return base + "?" + query; };
}

constexpr const char* single = "SQLOCK_TEST_REDIS_URL";
constexpr const char* redlock = "SQLOCK_TEST_REDLOCK_URL";

}  // namespace

INSTANTIATE_TEST_SUITE_P(
    redis, conformance,
    ::testing::Values(
        store_case{.label = "single", .url_var = single, .url = same_url},
        store_case{.label = "redlock", .url_var = redlock, .url = same_url},
        // compat=plain, the peers' layout (docs/interop.md): the same guarantees without fences.
        store_case{.label = "plain_layout", .url_var = single, .url = with("compat=plain")},
        store_case{
            .label = "redlock_plain_layout", .url_var = redlock, .url = with("compat=plain")},
        // release=async (docs/backends/redis.md): unlock() returns once the release is sent, so
        // another client may find the lock busy for a moment after it; the suite then waits
        // briefly for it.
        store_case{.label = "async_release",
                   .url_var = single,
                   .url = with("release=async"),
                   .release_async = true},
        store_case{.label = "redlock_async_release",
                   .url_var = redlock,
                   .url = with("release=async"),
                   .release_async = true}),
    store_label);

}  // namespace sqlock::test
