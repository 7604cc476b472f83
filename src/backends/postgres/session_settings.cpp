// One statement per new connection that turns off the server's session timeouts and makes a
// waiting statement end once its client is gone (see the header), sent as a plain query: no startup
// `options` of the library's own, which connection poolers refuse. The names come from the server's
// version and the user's own choices from the connection's startup options, both known without a
// round trip (reading pg_settings to tell them took 1.5-3 ms per connection, set_config alone 0.1
// ms).
#include "session_settings.hpp"

#include <algorithm>
#include <cctype>

namespace sqlock::postgres {

namespace {

struct session_setting {
  const char* name;
  int since;          // first server version that has it
  const char* value;  // what sqlock's sessions need
};

constexpr session_setting settings[] = {
    {"idle_session_timeout", 140000, "0"},                // ends an idle session
    {"idle_in_transaction_session_timeout", 90600, "0"},  // ends a session idle in a transaction
    {"transaction_timeout", 170000, "0"},                 // ends a long transaction's session
    {"statement_timeout", 0, "0"},                        // cancels a wait in the server
    {"lock_timeout", 0, "0"},                             // fails a wait for a row lock
    // A statement that waits in the server (pg_advisory_lock) ends within 100 ms once its
    // client is gone, so a dead waiter never takes a lock after its process ended. The server
    // arms this check when a statement starts: set inside the statement, it would not be.
    {"client_connection_check_interval", 140000, "100ms"},
};

// Whether the startup options set `name` ("-c name=v", "-cname=v", "--name=v"; '-' and '_'
// alike, any case, as the server reads them).
bool set_by_options(std::string options, std::string_view name) {
  std::transform(options.begin(), options.end(), options.begin(), [](unsigned char ch) {
    return ch == '-' ? '_' : static_cast<char>(std::tolower(ch));
  });
  const std::string want = std::string(name) + "=";
  for (auto at = options.find(want); at != std::string::npos; at = options.find(want, at + 1)) {
    // A whole name: after a blank, "-c" ("_c" now), "--" ("__"), or at the start.
    if (at == 0 || options[at - 1] == ' ' || options[at - 1] == '\t') return true;
    if (at >= 2 && options[at - 2] == '_' && (options[at - 1] == 'c' || options[at - 1] == '_'))
      return true;
  }
  return false;
}

}  // namespace

std::string session_settings_statement(int server_version, std::string_view startup_options) {
  std::string s;
  for (const auto& t : settings) {
    if (server_version < t.since || set_by_options(std::string(startup_options), t.name)) continue;
    s += s.empty() ? "SELECT " : ", ";
    s += std::string("pg_catalog.set_config('") + t.name + "', '" + t.value + "', false)";
  }
  return s;
}

void apply_session_settings(libpq_connection& l, steady_time deadline) {
  const auto statement = session_settings_statement(l.server_version(), l.startup_options());
  if (!statement.empty()) l.run_simple(statement, deadline, "PostgreSQL session settings failed");
}

}  // namespace sqlock::postgres
