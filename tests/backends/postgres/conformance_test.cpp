// The shared conformance suite on PostgreSQL: pessimistic mode as the schema owner, optimistic
// and advisory modes as the EXECUTE-only role (so the whole suite also proves that role needs
// nothing but EXECUTE); ShedLock's layout (compat=shedlock) and DistributedLock's advisory keys
// (compat=distributedlock, hashing allowed so that any name has a key); advisory mode with
// releases that do not wait (release=async).
#include <filesystem>
#include <string>

#include "conformance.hpp"
#include "pg_env.hpp"
#include "shedlock_table.hpp"

namespace sqlock::test {
namespace {

store_case in_mode(const std::string& label, const char* var, const std::string& mode) {
  return store_case{.label = label,
                    .url_var = var,
                    .url = [mode](const std::string& base, const std::filesystem::path&) {
                      pg::ensure_migrated();
                      return pg::with(base, "mode=" + mode);
                    }};
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(
    postgres, conformance,
    ::testing::Values(in_mode("pessimistic", pg::url_var, "pessimistic"),
                      in_mode("optimistic_app_role", pg::app_url_var, "optimistic"),
                      in_mode("advisory_app_role", pg::app_url_var, "advisory"),
                      // release=async (docs/backends/postgres.md): unlock() hands the release to
                      // the client's sender and returns, so another client may find the lock
                      // busy for a moment after it; the suite then waits briefly for it.
                      store_case{.label = "advisory_async_release",
                                 .url_var = pg::app_url_var,
                                 .url =
                                     [](const std::string& base, const std::filesystem::path&) {
                                       pg::ensure_migrated();
                                       return pg::with(base, "mode=advisory&release=async");
                                     },
                                 .release_async = true},
                      // compat=shedlock: ShedLock's table and rules (docs/interop.md), as the
                      // schema owner.
                      store_case{
                          .label = "shedlock",
                          .url_var = pg::url_var,
                          .url = [](const std::string& base,
                                    const std::filesystem::path&) { return shedlock_layout(base); },
                          .max_name_chars = 64},
                      // compat=distributedlock: DistributedLock.Postgres's advisory keys
                      // (docs/interop.md), no schema needed, as the EXECUTE-only role.
                      store_case{.label = "distributedlock_app_role",
                                 .url_var = pg::app_url_var,
                                 .url =
                                     [](const std::string& base, const std::filesystem::path&) {
                                       return pg::with(base,
                                                       "compat=distributedlock&allow_hashing=true");
                                     }}),
    store_label);

}  // namespace sqlock::test
