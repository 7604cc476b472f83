// The SQLite dialect: the engine's operations over the embedded sql/sqlite/ files.
#include "dialect.hpp"

#include "sqlock/errors.hpp"

namespace sqlock::sqlite {

sql::dialect make_dialect(const std::string& mode) {
  if (mode != "pessimistic" && mode != "optimistic")
    throw config_error("SQLite mode must be pessimistic or optimistic (got '" + mode +
                       "'; advisory locks need a server database)");
  const auto& b = sql::bundle_sqlite();
  auto op = [&](const std::string& key, const std::string& file,
                const std::string& tail = std::string()) {
    sql::operation o{key, {std::string(b.routine(file))}};
    if (!tail.empty()) o.statements.emplace_back(b.routine(tail));
    return o;
  };
  sql::dialect d;
  d.kind = "sqlite";
  d.mode = mode;
  d.acquire = op("acquire", "acquire_" + mode + ".sql", "writer_mark.sql");
  d.renew = op("renew", "renew.sql");
  d.release = op("release", "release_" + mode + ".sql");
  d.list = op("list", "list.sql");
  d.force_release = op("force_release", "force_release.sql");
  d.events = op("events", "events.sql");
  d.sweep = op("sweep", "sweep.sql");
  d.fence_check = op("fence_check", "fence_check.sql");
  d.version_table_query =
      "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlock_schema_version'";
  d.version_query = "SELECT max(version) FROM sqlock_schema_version";
  d.versions_query = "SELECT version FROM sqlock_schema_version";
  d.notify = true;
  // Shared and permit holds: the same statements in both modes (the modes differ in how the
  // exclusive row is kept; a holder's row is deleted on release in either).
  d.kinds = true;
  d.acquire_shared = op("acquire_shared", "acquire_shared.sql");
  d.renew_shared = op("renew_shared", "renew_shared.sql");
  d.release_shared = op("release_shared", "release_shared.sql");
  d.clear_mark = op("clear_mark", "clear_mark.sql");
  d.force_release_shared = op("force_release_shared", "force_release_shared.sql");
  d.sweep_shared = op("sweep_shared", "sweep_shared.sql");
  return d;
}

}  // namespace sqlock::sqlite
