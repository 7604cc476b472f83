// The shared conformance suite on MySQL/MariaDB, in every mode, ShedLock's layout and the
// GET_LOCK names of DistributedLock.MySql (compat=distributedlock) and of hand-written locks
// (compat=raw).
// SQLOCK_TEST_MYSQL_URL names a user that may migrate; the schema is migrated once by the
// environment below.
#include <filesystem>
#include <string>

#include "conformance.hpp"
#include "mysql_env.hpp"
#include "shedlock_table.hpp"

namespace sqlock::test {
namespace {

constexpr const char* url_var = "SQLOCK_TEST_MYSQL_URL";

store_case in_mode(const std::string& mode) {
  return store_case{.label = mode,
                    .url_var = url_var,
                    .url = [mode](const std::string& base, const std::filesystem::path&) {
                      ensure_mysql_schema(base);
                      return with_param(base, "mode", mode);
                    }};
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(
    mysql, conformance,
    ::testing::Values(in_mode("pessimistic"), in_mode("optimistic"), in_mode("advisory"),
                      // compat=shedlock: ShedLock's table and rules (docs/interop.md).
                      store_case{
                          .label = "shedlock",
                          .url_var = url_var,
                          .url = [](const std::string& base,
                                    const std::filesystem::path&) { return shedlock_layout(base); },
                          .max_name_chars = 64},
                      // compat=distributedlock: DistributedLock.MySql's GET_LOCK names
                      // (docs/interop.md); compat=raw: the name is the GET_LOCK name, at most
                      // 64 characters.
                      store_case{.label = "distributedlock",
                                 .url_var = url_var,
                                 .url =
                                     [](const std::string& base, const std::filesystem::path&) {
                                       return with_param(base, "compat", "distributedlock");
                                     },
                                 .ascii_names = true},
                      store_case{.label = "raw",
                                 .url_var = url_var,
                                 .url =
                                     [](const std::string& base, const std::filesystem::path&) {
                                       return with_param(base, "compat", "raw");
                                     },
                                 .max_name_chars = 64}),
    store_label);

}  // namespace sqlock::test
