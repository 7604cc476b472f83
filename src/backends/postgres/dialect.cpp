// The PostgreSQL dialect of the shared SQL engine: statement texts calling the stored
// functions of sql/postgresql/, schema-version queries and schema-name rendering. Vendor-free,
// so every PostgreSQL driver (libpqxx here, SOCI elsewhere) reuses the same SQL.
#include <cctype>

#include "dialect.hpp"
#include "sqlock/errors.hpp"

namespace sqlock {
namespace sql {
const bundle& bundle_postgresql();
}

namespace postgres {

const sql::bundle& bundle() {
  return sql::bundle_postgresql();
}

void check_schema_name(const std::string& schema) {
  auto bad = [&](const std::string& why) {
    throw config_error("bad PostgreSQL schema name '" + schema + "': " + why);
  };
  if (schema.empty()) bad("it is empty");
  if (schema.size() > 50) bad("longer than 50 characters");
  if (schema.rfind("pg_", 0) == 0) bad("names starting with pg_ are reserved");
  for (std::size_t i = 0; i < schema.size(); ++i) {
    char c = schema[i];
    bool ok = (c >= 'a' && c <= 'z') || c == '_' || (i > 0 && c >= '0' && c <= '9');
    if (!ok) bad("use lower-case letters, digits and '_' only, not starting with a digit");
  }
}

std::string execute_role_name(const std::string& schema, const std::string& execute_role) {
  if (execute_role.empty()) return schema + "_execute";
  try {
    check_schema_name(execute_role);
  } catch (const config_error&) {
    throw config_error("bad PostgreSQL execute_role '" + execute_role +
                       "': use lower-case letters, digits and '_' (at most 50, not pg_...)");
  }
  return execute_role;
}

std::string render(std::string_view text, const std::string& schema,
                   const std::string& execute_role) {
  const std::string role = execute_role_name(schema, execute_role);
  if (schema == default_schema && role == "sqlock_execute") return std::string(text);
  auto is_word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  bool in_comment = false;
  for (std::size_t i = 0; i < text.size();) {
    if (text.compare(i, 2, "--") == 0) {  // comment to the end of the line
      in_comment = true;
      out += "--";
      i += 2;
    } else if (text[i] == '\n') {
      in_comment = false;
      out.push_back(text[i++]);
    } else if (is_word(text[i])) {
      std::size_t j = i;
      while (j < text.size() && is_word(text[j])) ++j;
      auto word = text.substr(i, j - i);
      // In comments only "sqlock.<object>" is the schema ("sqlock migrate" is the command).
      bool qualified = j < text.size() && text[j] == '.';
      if (word == "sqlock" && (!in_comment || qualified))
        out += schema;
      else if (word == "sqlock_execute")
        out += role;
      else
        out.append(word);
      i = j;
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

std::string notify_channel(const std::string& schema) {
  return schema;
}

sql::dialect make_dialect(const std::string& mode, const std::string& schema,
                          const std::string& execute_role) {
  check_schema_name(schema);
  (void)execute_role_name(schema, execute_role);  // validates it
  bool known = false;
  for (auto m : modes) known = known || m == mode;
  if (!known)
    throw config_error("PostgreSQL mode must be pessimistic, optimistic or advisory (got '" + mode +
                       "')");
  const std::string s = schema + ".";
  auto op = [&](const std::string& key, const std::string& text) {
    return sql::operation{"pg_" + mode + "_" + key, {text}};
  };
  sql::dialect d;
  d.kind = "postgresql";
  d.mode = mode;
  if (mode == "advisory") {
    // The lean pair (sql/postgresql/advisory_session.sql): the library tracks its holds on
    // each session and records the lasting ones itself (advisory_backend, hold_recorder).
    d.acquire = op("acquire", "SELECT " + s + "advisory_lock_key(:key, :name, :owner, :holder)");
    d.renew = op("renew", "SELECT " + s + "advisory_holding(:name)");
    d.release =
        op("release", "SELECT " + s + "advisory_unlock_key(:key, :name, :owner, :fence, false)");
  } else {
    d.acquire = op("acquire", "SELECT fence, status FROM " + s + "acquire_" + mode +
                                  "(:name, :owner, :lease_ms, :holder, :mark_ms)");
    d.renew = op("renew", "SELECT " + s + "renew(:name, :owner, :lease_ms)");
    d.release = op("release", "SELECT " + s + "release_" + mode + "(:name, :owner)");
    // Shared and permit holds (sql/postgresql/acquire_shared.sql), both row modes.
    d.kinds = true;
    d.acquire_shared = op("acquire_shared", "SELECT fence, status FROM " + s +
                                                "acquire_shared(:name, :owner, :lease_ms, :holder, "
                                                ":kind, :permits, :mode)");
    d.release_shared = op("release_shared", "SELECT " + s + "release_shared(:name, :owner)");
    d.clear_mark = op("clear_mark", "SELECT " + s + "clear_mark(:name, :owner)");
    d.clear_marks = op("clear_marks", "SELECT " + s + "clear_marks(CAST(:marks AS jsonb))");
  }
  d.list = op("list",
              "SELECT name, owner, fence, acquired_at, expires_at, mode, holder, kind, permits "
              "FROM " +
                  s + "list_holds(:prefix)");
  d.force_release = op("force_release", "SELECT " + s + "force_release(:name, :actor)");
  d.sweep = op("sweep", "SELECT " + s + "sweep(:limit)");
  d.fence_check = op("fence_check", "SELECT " + s + "fence_check(:name, :fence)");
  d.events =
      op("events", "SELECT at, event, name, owner, fence, mode, holder, actor, detail FROM " + s +
                       "recent_events(:prefix, :limit)");
  // Waiting requests (sql/postgresql/waiting.sql), written by each client's recorder.
  d.waiting = op("waiting", "SELECT name, owner, holder, kind, permits, since FROM " + s +
                                "list_waiting(:prefix)");
  d.record_waits =
      op("record_waits", "SELECT " + s + "record_waits(CAST(:waits AS jsonb), :lease_ms)");
  // The version function is part of V001 and callable by EXECUTE-only roles (the version table
  // itself is not readable by them).
  d.version_table_query =
      "SELECT 1 FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = "
      "p.pronamespace WHERE n.nspname = '" +
      schema + "' AND p.proname = 'schema_version'";
  d.version_query = "SELECT " + s + "schema_version()";
  d.versions_query = "SELECT version FROM " + s + "schema_version";
  for (const auto& f : bundle().routines) d.install_routines.emplace_back(f.name);
  d.render = [schema, execute_role](std::string_view text) {
    return render(text, schema, execute_role);
  };
  d.sweep_batch = 1000;
  d.notify = false;
  return d;
}

}  // namespace postgres
}  // namespace sqlock
