// Poolers: declared modes, proxy detection by backend key, the LISTEN connection's target and
// the advisory refusal.
#include "pooler.hpp"

#include <cctype>

#include "sqlock/errors.hpp"
#include "sqlock/url.hpp"

namespace sqlock::postgres {

bool moves_sessions(const std::string& pooler) {
  return pooler == "transaction" || pooler == "statement";
}

bool through_pooler(const std::string& pooler) {
  return !pooler.empty() && pooler != "none";
}

bool unnamed_statements(const options& o) {
  return !o.prepare || moves_sessions(o.pooler);
}

bool listens_elsewhere(const options& o) {
  return !o.listen_host.empty() || !o.listen_port.empty() || !o.listen_dbname.empty();
}

namespace {

bool uri_unreserved(unsigned char c) {
  return std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

// A key=value value quoted as libpq reads it.
std::string kv_quoted(const std::string& v) {
  std::string out = "'";
  for (char c : v) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

}  // namespace

std::string listen_conninfo(const std::string& conninfo, const options& o) {
  const bool uri = conninfo.rfind("postgresql://", 0) == 0 || conninfo.rfind("postgres://", 0) == 0;
  std::string out = conninfo;
  // libpq takes the last value of a keyword: the URI's query (or a later key=value) overrides
  // the host, port and database written before it.
  auto add = [&](const char* key, const std::string& value) {
    if (value.empty()) return;
    if (uri) {
      auto hash = out.find('#');
      if (hash != std::string::npos) out.resize(hash);
      out += out.find('?') == std::string::npos ? "?" : "&";
      out += std::string(key) + "=" + percent_encode(value, uri_unreserved);
    } else {
      out += std::string(" ") + key + "=" + kv_quoted(value);
    }
  };
  add("host", o.listen_host);
  add("port", o.listen_port);
  add("dbname", o.listen_dbname);
  return out;
}

int server_process(libpq_connection& l, steady_time deadline) {
  auto rows = l.run_simple("SELECT pg_catalog.pg_backend_pid()", deadline,
                           "PostgreSQL server process query failed");
  if (rows.size() != 1 || rows[0].empty() || !rows[0][0]) return l.server_pid();
  return std::stoi(*rows[0][0]);
}

void refuse_advisory(const std::string& pooler) {
  const std::string instead =
      "use mode=pessimistic or mode=optimistic through it (their holds live in tables), point "
      "the URL straight at the server or at a pooler in session pooling, or take "
      "transaction-scoped locks (sqlock/postgres/xact_lock.hpp), which end with the "
      "transaction the pooler keeps on one server session";
  if (pooler.empty())
    throw config_error(
        "PostgreSQL advisory mode refused: the connection goes through a proxy or connection "
        "pooler (the backend key it was given is not the server process's), and advisory holds "
        "belong to a server session, which only session pooling keeps for one client. If it "
        "runs pool_mode=session, add pooler=session to the URL; otherwise " +
        instead);
  throw config_error("PostgreSQL advisory mode cannot run through a pooler in " + pooler +
                     " pooling (pooler=" + pooler +
                     "): advisory holds belong to a server session, which the pooler hands to "
                     "other clients between " +
                     (pooler == "statement" ? "statements" : "transactions") + "; " + instead);
}

}  // namespace sqlock::postgres
