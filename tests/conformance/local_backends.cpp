// The conformance suite on the backends that need no server: memory: and sqlite:.
#include <filesystem>
#include <string>

#include "conformance.hpp"

namespace sqlock::test {
namespace {

std::string sqlite_url(const std::filesystem::path& tmp, const std::string& query) {
  return "sqlite:" + (tmp / "locks.db").string() + "?" + query;
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(
    local, conformance,
    ::testing::Values(
        store_case{.label = "memory",
                   .url =
                       [](const std::string&, const std::filesystem::path& tmp) {
                         return "memory:" + tmp.filename().string();
                       }},
        store_case{.label = "sqlite_pessimistic",
                   .url =
                       [](const std::string&, const std::filesystem::path& tmp) {
                         return sqlite_url(tmp, "mode=pessimistic");
                       }},
        store_case{.label = "sqlite_optimistic",
                   .url =
                       [](const std::string&, const std::filesystem::path& tmp) {
                         return sqlite_url(tmp, "mode=optimistic");
                       }},
        // compat=shedlock: ShedLock's table and rules (docs/interop.md), created on first use.
        store_case{.label = "sqlite_shedlock",
                   .url =
                       [](const std::string&, const std::filesystem::path& tmp) {
                         return sqlite_url(tmp, "compat=shedlock");
                       },
                   .max_name_chars = 64}),
    store_label);

}  // namespace sqlock::test
