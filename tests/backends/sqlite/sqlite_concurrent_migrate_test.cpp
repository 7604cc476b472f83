// Five processes opening one fresh SQLite file at once: each creates the schema on first use,
// all succeed, and the file ends at the newest version with each version recorded once.
#include <gtest/gtest.h>

#include <filesystem>

#include "backends/sqlite/dialect.hpp"
#include "concurrent_connects.hpp"
#include "sqlock/random.hpp"

namespace sqlock::test {
namespace {

TEST(sqlite_migrate, five_processes_opening_a_fresh_file_at_once_all_connect) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("sqlock-migrate-" + random_token().substr(0, 10));
  std::filesystem::create_directories(dir);
  const std::string url = "sqlite:" + (dir / "fresh.db").string();
  EXPECT_EQ(connect_in_processes(url, 5), 5);
  const auto v = std::to_string(sql::latest_version(sql::bundle_sqlite()));
  EXPECT_EQ(recorded_versions(url, "sqlock_schema_version"), v + " " + v + " " + v);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sqlock::test
