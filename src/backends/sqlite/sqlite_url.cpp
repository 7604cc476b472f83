// The sqlite: URL (sqlite:/path/to/file.db?mode=...&busy_timeout=...) turned into options, the
// default path when none is given, and the scheme's registration.
#include <cstdlib>
#include <filesystem>

#include "sqlock/backend/registry.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/sqlite/sqlite.hpp"
#include "sqlock/url.hpp"

namespace sqlock {
namespace sqlite {

std::string default_path() {
  const char* xdg = std::getenv("XDG_STATE_HOME");
  std::filesystem::path base;
  if (xdg && *xdg) {
    base = xdg;
  } else {
    const char* home = std::getenv("HOME");
    if (!home || !*home)
      throw config_error("neither XDG_STATE_HOME nor HOME is set: give sqlite:PATH");
    base = std::filesystem::path(home) / ".local" / "state";
  }
  return (base / "sqlock" / "locks.db").string();
}

}  // namespace sqlite

namespace backends {
void register_sqlite() {
  register_backend("sqlite", [](const url& u) -> std::shared_ptr<backend> {
    u.check_params({"mode", "busy_timeout", "max_connections", "pool", "compat", "shedlock_table"});
    if (!u.hosts.empty())
      throw config_error("SQLite URL takes a path, not a host: sqlite:/path/to/file.db (got '" +
                         u.redacted() + "')");
    sqlite::options o;
    o.mode = u.choice_param("mode", {"pessimistic", "optimistic"}).value_or("pessimistic");
    o.busy_timeout = u.duration_param("busy_timeout", milliseconds(1)).value_or(o.busy_timeout);
    if (auto v = u.count_param("max_connections", 1, 1000))
      o.max_connections = static_cast<std::size_t>(*v);
    if (auto v = u.count_param("pool", 1, 1000)) o.pool = static_cast<std::size_t>(*v);
    o.compat = u.choice_param("compat", {"shedlock"}).value_or("");
    if (u.query.count("shedlock_table")) o.shedlock_table = u.param("shedlock_table");
    std::string path = u.path;
    if (path.empty()) {
      path = sqlite::default_path();
      std::error_code ec;
      std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
      if (ec) throw config_error("cannot create directory for " + path + ": " + ec.message());
    }
    return sqlite::open(path, o);
  });
}
}  // namespace backends

}  // namespace sqlock
