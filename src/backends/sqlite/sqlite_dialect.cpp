// The SQLite dialect: the engine's operations over the embedded sql/sqlite/ files.
#include "sqlock/sqlite/dialect.hpp"

namespace sqlock::sqlite {

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
