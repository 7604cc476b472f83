// Migrations (migrations.hpp, bundle.hpp): the embedded bundle's files and versions, the schema
// version a database records, refusing a schema installed out of order, migrate() and the printed
// script.
#include <charconv>
#include <set>

#include "bundle.hpp"
#include "migrations.hpp"
#include "rows.hpp"
#include "sqlock/errors.hpp"

namespace sqlock::sql {

std::string_view bundle::routine(std::string_view file_name) const {
  for (const auto& f : routines)
    if (f.name == file_name) return f.text;
  throw config_error("SQL file '" + std::string(file_name) + "' is not in the " + std::string(db) +
                     " bundle");
}

int migration_version(std::string_view file_name) {
  int v = 0;
  if (file_name.size() < 2 || file_name[0] != 'V')
    throw config_error("migration file name '" + std::string(file_name) +
                       "' must be V<n>__<what>.sql");
  auto [p, ec] = std::from_chars(file_name.data() + 1, file_name.data() + file_name.size(), v);
  if (ec != std::errc() || std::string_view(p).substr(0, 2) != "__" || v <= 0)
    throw config_error("migration file name '" + std::string(file_name) +
                       "' must be V<n>__<what>.sql");
  return v;
}

int latest_version(const bundle& b) {
  int v = 0;
  for (const auto& m : b.migrations) v = std::max(v, migration_version(m.name));
  return v;
}

namespace {
std::string rendered(const dialect& d, std::string_view text) {
  return d.render ? d.render(text) : std::string(text);
}

}  // namespace

std::uint64_t decode_u64(const std::optional<std::string>& v, const char* what) {
  if (!v) throw backend_error(std::string("NULL ") + what + " from the database");
  std::uint64_t x = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), x);
  if (ec != std::errc() || p != v->data() + v->size())
    throw backend_error(std::string("bad ") + what + " '" + *v + "' from the database");
  return x;
}

lock_kind decode_kind(const std::optional<std::string>& v) {
  if (v && *v == "shared") return lock_kind::shared;
  if (v && *v == "permit") return lock_kind::permit;
  return lock_kind::exclusive;
}

int schema_version(connection& c, const dialect& d, steady_time deadline) {
  if (c.query(d.version_table_query, deadline).empty()) return 0;
  auto r = c.query(d.version_query, deadline);
  if (r.empty() || r[0].empty() || !r[0][0]) return 0;
  return static_cast<int>(decode_u64(r[0][0], "schema version"));
}

namespace {
// Versions of the bundle below the database's highest that the database never recorded: a
// schema installed out of order (a build with V5 before one with V4). They are not applied
// late - an older migration can replace routines a newer one already changed - but refused.
void refuse_gaps(connection& c, const bundle& b, const dialect& d, int current) {
  std::set<int> recorded;
  for (const auto& row : c.query(d.versions_query))
    if (!row.empty()) recorded.insert(static_cast<int>(decode_u64(row[0], "schema version")));
  std::string missing;
  for (const auto& m : b.migrations) {
    int v = migration_version(m.name);
    if (v < current && !recorded.count(v))
      missing += (missing.empty() ? "" : ", ") + std::string(m.name);
  }
  if (!missing.empty())
    throw config_error("the " + std::string(b.db) + " schema is at version " +
                       std::to_string(current) + " but never recorded " + missing +
                       ": it was installed out of order; sqlock does not apply an older "
                       "migration over a newer one - install into a fresh schema, or apply "
                       "the missing file by hand after checking it (`sqlock migrate --print`)");
}
}  // namespace

int migrate(connection& c, const bundle& b, const dialect& d) {
  c.begin_migration();
  int version = 0;
  try {
    int current = schema_version(c, d);
    if (current > 0) refuse_gaps(c, b, d, current);
    bool changed = false;
    for (const auto& m : b.migrations) {
      if (migration_version(m.name) <= current) continue;
      c.execute_script(rendered(d, m.text));
      changed = true;
    }
    for (const auto& r : d.install_routines) {
      c.execute_script(rendered(d, b.routine(r)));
      changed = true;
    }
    // Up to date already (an embedded SQLite file opened again): no need to read it twice.
    version = changed ? schema_version(c, d) : current;
  } catch (...) {
    c.end_migration(false);
    throw;
  }
  c.end_migration(true);
  return version;
}

std::string migration_script(const bundle& b, const dialect& d) {
  std::string out;
  for (const auto& m : b.migrations) {
    out += "-- ==== migrations/" + std::string(b.db) + "/" + std::string(m.name) + "\n";
    out += rendered(d, m.text);
    if (!out.empty() && out.back() != '\n') out += '\n';
  }
  for (const auto& r : d.install_routines) {
    out += "-- ==== sql/" + std::string(b.db) + "/" + r + "\n";
    out += rendered(d, b.routine(r));
    if (!out.empty() && out.back() != '\n') out += '\n';
  }
  return out;
}

}  // namespace sqlock::sql
