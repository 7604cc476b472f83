// The shared conformance suite on MySQL/MariaDB, in every mode and ShedLock's layout.
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
                          .max_name_chars = 64}),
    store_label);

}  // namespace sqlock::test
