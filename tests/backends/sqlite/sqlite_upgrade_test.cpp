// Upgrading a SQLite database from schema version 1 with holds live: a hold a version-1 client
// took stays held through `migrate` (new clients are refused, exclusive and shared alike), its
// owner can still renew and release it through the new library, and a version-1 client still
// running after the upgrade keeps excluding new clients on exclusive locks.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>

#include "backends/sqlite/dialect.hpp"
#include "kinds_checks.hpp"
#include "sql/sql_engine.hpp"
#include "sqlock/backend.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/random.hpp"

namespace sqlock::test {
namespace {

// What a version-1 client runs to acquire (sql/sqlite/acquire_pessimistic.sql of version 1),
// with its parameters written in.
std::string wave1_acquire(const std::string& name, const std::string& owner) {
  return "DELETE FROM sqlock_locks WHERE name = '" + name + "' AND owner <> '" + owner +
         "' AND (owner = '' OR boot_id <> sqlock_boot_id() OR expires_ms <= sqlock_now_ms());"
         "INSERT INTO sqlock_locks (name, owner, fence, version, boot_id, acquired_ms, "
         "expires_ms, acquired_at, mode, holder) "
         "SELECT '" +
         name + "', '" + owner +
         "', c.value + 1, 0, sqlock_boot_id(), "
         "sqlock_now_ms(), sqlock_now_ms() + 60000, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), "
         "'pessimistic', 'wave1' FROM sqlock_counters c WHERE c.name = 'fence' "
         "ON CONFLICT (name) DO NOTHING;"
         "UPDATE sqlock_counters SET value = (SELECT fence FROM sqlock_locks WHERE name = '" +
         name + "' AND owner = '" + owner +
         "') WHERE name = 'fence' AND value < (SELECT fence "
         "FROM sqlock_locks WHERE name = '" +
         name + "' AND owner = '" + owner + "');";
}

class wave1_client {
 public:
  explicit wave1_client(const std::string& path) {
    EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK);
    sqlite3_busy_timeout(db_, 5000);
    sqlite::install_functions(db_);
  }
  ~wave1_client() { sqlite3_close(db_); }
  wave1_client(const wave1_client&) = delete;
  wave1_client& operator=(const wave1_client&) = delete;

  void exec(const std::string& script) {
    char* err = nullptr;
    int rc = sqlite3_exec(db_, script.c_str(), nullptr, nullptr, &err);
    std::string msg = err ? err : "";
    sqlite3_free(err);
    ASSERT_EQ(rc, SQLITE_OK) << msg;
  }
  // The fence `owner` holds `name` with, or 0.
  std::int64_t fence_of(const std::string& name, const std::string& owner) {
    std::int64_t f = 0;
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db_, "SELECT fence FROM sqlock_locks WHERE name = ? AND owner = ?", -1, &s,
                       nullptr);
    sqlite3_bind_text(s, 1, name.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, owner.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(s) == SQLITE_ROW) f = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return f;
  }
  int version() {
    int v = 0;
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db_, "SELECT max(version) FROM sqlock_schema_version", -1, &s, nullptr);
    if (sqlite3_step(s) == SQLITE_ROW) v = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    return v;
  }

 private:
  sqlite3* db_ = nullptr;
};

TEST(sqlite_upgrade, HoldTakenOnVersion1SurvivesTheMigration) {
  temp_dir dir;
  const std::string path = (dir.path / "old.db").string();
  wave1_client old(path);
  const auto& v1 = sql::bundle_sqlite().migrations.at(0);
  ASSERT_EQ(v1.name, "V001__locks.sql");
  old.exec(std::string(v1.text));
  const std::string owner = random_token();
  old.exec(wave1_acquire("job", owner));
  const auto fence = old.fence_of("job", owner);
  ASSERT_GT(fence, 0);
  ASSERT_EQ(old.version(), 1);

  auto b = make_backend("sqlite:" + path);  // opening migrates to the current version
  EXPECT_EQ(old.version(), sql::latest_version(sql::bundle_sqlite()));
  EXPECT_GE(old.version(), 2);

  expect_hold_survived_upgrade(*b, "job", owner, static_cast<std::uint64_t>(fence));

  // A version-1 client still running after the upgrade and a new one exclude each other.
  auto mine = b->try_acquire(kinds_request("report", lock_kind::exclusive), soon());
  ASSERT_TRUE(mine);
  const std::string late = random_token();
  old.exec(wave1_acquire("report", late));
  EXPECT_EQ(old.fence_of("report", late), 0);
  EXPECT_TRUE(b->release(*mine, soon()));
  old.exec(wave1_acquire("report", late));
  const auto late_fence = old.fence_of("report", late);
  EXPECT_GT(late_fence, static_cast<std::int64_t>(mine->fence));
  EXPECT_FALSE(b->try_acquire(kinds_request("report", lock_kind::exclusive), soon()));
}

// A schema that recorded a later version but not an earlier one (installed out of order, across
// builds) is refused with the missing file named, not patched by running the older file late.
TEST(sqlite_upgrade, AVersionMissingBelowTheRecordedOnesIsRefused) {
  temp_dir dir;
  const std::string path = (dir.path / "gap.db").string();
  auto b = make_backend("sqlite:" + path);
  wave1_client raw(path);
  raw.exec("DELETE FROM sqlock_schema_version WHERE version = 1");
  ASSERT_EQ(raw.version(), sql::latest_version(sql::bundle_sqlite()));
  try {
    schema_of(*b).migrate();
    FAIL() << "migrate() accepted a schema without version 1";
  } catch (const config_error& e) {
    EXPECT_NE(std::string(e.what()).find("V001__locks.sql"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("out of order"), std::string::npos) << e.what();
  }
  raw.exec("INSERT INTO sqlock_schema_version (version, description) VALUES (1, 'locks')");
  EXPECT_EQ(schema_of(*b).migrate(), sql::latest_version(sql::bundle_sqlite()));
}

}  // namespace
}  // namespace sqlock::test
