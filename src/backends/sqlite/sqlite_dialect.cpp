// The SQLite dialect, vendor-free: the engine's operations over the embedded sql/sqlite/ files
// and the values of the two SQL functions every SQLite driver registers on its connections
// (the kernel's boot-time clock and this boot's id). No SQLite header: the SQLite backend and
// the SOCI backend each register the functions with their own handle type.
#include <ctime>
#include <fstream>

#include "sqlock/sqlite/dialect.hpp"

namespace sqlock::sqlite {

std::int64_t now_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

const std::string& boot_id() {
  static const std::string id = [] {
    std::ifstream f("/proc/sys/kernel/random/boot_id");
    std::string s;
    std::getline(f, s);
    return s.empty() ? std::string("unknown-boot") : s;
  }();
  return id;
}

sql::dialect make_dialect(const std::string& mode) {
  if (mode != "pessimistic" && mode != "optimistic")
    throw config_error("SQLite mode must be pessimistic or optimistic (got '" + mode +
                       "'; advisory locks need a server database)");
  const auto& b = sql::bundle_sqlite();
  auto op = [&](const std::string& key, const std::string& file) {
    return sql::operation{key, {std::string(b.routine(file))}};
  };
  sql::dialect d;
  d.kind = "sqlite";
  d.mode = mode;
  d.acquire = op("acquire", "acquire_" + mode + ".sql");
  d.renew = op("renew", "renew.sql");
  d.release = op("release", "release_" + mode + ".sql");
  d.list = op("list", "list.sql");
  d.force_release = op("force_release", "force_release.sql");
  d.sweep = op("sweep", "sweep.sql");
  d.fence_check = op("fence_check", "fence_check.sql");
  d.version_table_query =
      "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlock_schema_version'";
  d.version_query = "SELECT max(version) FROM sqlock_schema_version";
  d.notify = true;
  return d;
}

}  // namespace sqlock::sqlite
