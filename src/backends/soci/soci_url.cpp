// The soci+<db> URL (soci+sqlite3:, soci+postgresql://, soci+mysql://) turned into the flavor
// of its database and the options the backend opens with; the flavor adds its own parameters.
#include "soci_connection.hpp"

namespace sqlock::soci::detail {

const flavor& flavor_of_url(const url& u) {
  if (u.scheme.rfind("soci+", 0) != 0)
    throw config_error(
        "a SOCI URL starts with soci+sqlite3:, soci+postgresql:// or soci+mysql:// (got '" +
        u.redacted() + "')");
  return flavor_named(u.scheme.substr(5));
}

options options_from_url(const url& u, const flavor& f) {
  std::vector<std::string> allowed = {"mode",    "max_connections", "pool",          "migrate",
                                      "timeout", "compat",          "shedlock_table"};
  for (auto& p : f.driver_params()) allowed.push_back(p);
  u.check_params(allowed);
  options o;
  // advisory is named so that the flavor explains why SOCI cannot run it.
  o.mode = u.choice_param("mode", {"pessimistic", "optimistic", "advisory"}).value_or(o.mode);
  if (auto v = u.count_param("max_connections", 1, 1024))
    o.max_connections = static_cast<std::size_t>(*v);
  if (auto v = u.count_param("pool", 1, 1024)) o.pool = static_cast<std::size_t>(*v);
  o.auto_migrate = u.choice_param("migrate", {"auto", "off"}).value_or("off") == "auto";
  o.io_timeout =
      u.duration_param("timeout", milliseconds(1), std::chrono::hours(1)).value_or(o.io_timeout);
  o.compat = u.choice_param("compat", {"shedlock"}).value_or("");
  if (u.query.count("shedlock_table")) o.shedlock_table = u.param("shedlock_table");
  f.apply_params(u, o);
  return o;
}

}  // namespace sqlock::soci::detail
