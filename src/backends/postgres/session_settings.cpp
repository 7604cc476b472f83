// One statement per new connection that turns off the server's session timeouts (see the
// header), sent as a plain query: no startup `options`, which connection poolers refuse.
#include "session_settings.hpp"

#include <string>

namespace sqlock::postgres {

namespace {

std::string settings_statement() {
  std::string names;
  for (const char* n : session_timeouts)
    names += std::string(names.empty() ? "" : ", ") + "'" + n + "'";
  // pg_settings lists only what this server version has; a value from the startup packet
  // (source 'client') is the user's explicit choice and stays.
  return "SELECT pg_catalog.set_config(name, '0', false) FROM pg_catalog.pg_settings WHERE name "
         "IN (" +
         names + ") AND source <> 'client' AND setting <> '0'";
}

}  // namespace

void apply_session_settings(link& l, steady_time deadline) {
  static const std::string statement = settings_statement();
  l.run_simple(statement, deadline, "PostgreSQL session settings failed");
}

}  // namespace sqlock::postgres
