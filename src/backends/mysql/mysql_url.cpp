// MySQL/MariaDB backend: URL parsing and the factory, which opens one class per lock model:
// the row-based models (pessimistic, optimistic) in mysql_backend.cpp, the session-bound model
// (GET_LOCK) in advisory_backend.cpp, a peer's layout (compat=) in compat.cpp.
#include <algorithm>

#include "advisory_backend.hpp"
#include "budget.hpp"
#include "compat.hpp"
#include "dialect.hpp"
#include "mysql_backend.hpp"
#include "sql/sql_engine.hpp"
#include "sqlock/mysql/mysql.hpp"
#include "sqlock/url.hpp"

namespace sqlock {
namespace mysql {
namespace {

std::string shown_url(const options& o) {
  std::string s = "mysql://" + percent_encode(o.user) + "@";
  s += o.socket.empty() ? o.host + ":" + std::to_string(o.port) : "localhost";
  s += "/" + percent_encode(o.database);
  if (!o.socket.empty()) s += "?socket=" + percent_encode(o.socket);
  return s;
}

const std::vector<std::string> modes = {"pessimistic", "optimistic", "advisory"};
constexpr std::int64_t max_pool = 1024;  // any count of connections
constexpr std::int64_t max_waiters = 256;
constexpr milliseconds max_timeout = std::chrono::hours(24);

}  // namespace

options parse_url(const std::string& url_text) {
  url u = url::parse(url_text);
  if (u.scheme != "mysql" && u.scheme != "mariadb")
    throw config_error("not a mysql:// or mariadb:// URL: " + u.redacted());
  u.check_params({"mode",       "socket",       "max_connections", "pool",     "sessions",
                  "waiters",    "record_after", "connect_timeout", "timeout",  "migrate",
                  "ssl_mode",   "ssl_ca",       "ssl_capath",      "ssl_cert", "ssl_key",
                  "ssl_cipher", "ssl_crl",      "tls_version",     "compat",   "shedlock_table",
                  "release"});
  if (u.hosts.size() > 1)
    throw config_error("MySQL URL takes one host (got " + std::to_string(u.hosts.size()) + " in '" +
                       u.redacted() + "'); use a proxy or the primary's address");
  options o;
  if (!u.hosts.empty()) {
    if (!u.hosts[0].host.empty()) o.host = u.hosts[0].host;
    if (u.hosts[0].port > 0) o.port = u.hosts[0].port;
  }
  o.user = u.user.value_or("");
  o.password = u.password.value_or("");
  o.database = u.path;
  while (!o.database.empty() && o.database.front() == '/') o.database.erase(0, 1);
  if (o.database.empty() || o.database.find('/') != std::string::npos)
    throw config_error(
        "MySQL URL needs the database holding the sqlock schema: mysql://user@host/db (got '" +
        u.redacted() + "')");
  o.mode = u.choice_param("mode", modes).value_or(o.mode);
  o.socket = u.param("socket");
  if (auto v = u.count_param("max_connections", 1, max_pool))
    o.max_connections = static_cast<std::size_t>(*v);
  if (auto v = u.count_param("pool", 1, max_pool)) o.pool = static_cast<std::size_t>(*v);
  if (auto v = u.count_param("sessions", 1, max_pool)) o.sessions = static_cast<std::size_t>(*v);
  if (auto v = u.count_param("waiters", 0, max_waiters)) o.waiters = static_cast<std::size_t>(*v);
  if (auto v = u.duration_param("timeout", milliseconds(1), max_timeout)) o.timeout = *v;
  if (auto v = u.duration_param("record_after", milliseconds(0), max_timeout)) o.record_after = *v;
  o.connect_timeout =
      u.duration_param("connect_timeout", milliseconds(1), max_timeout).value_or(o.timeout);
  o.auto_migrate = u.choice_param("migrate", {"auto", "off"}).value_or("off") == "auto";
  o.ssl_ca = u.param("ssl_ca");
  o.ssl_capath = u.param("ssl_capath");
  o.ssl_cert = u.param("ssl_cert");
  o.ssl_key = u.param("ssl_key");
  o.ssl_cipher = u.param("ssl_cipher");
  o.ssl_crl = u.param("ssl_crl");
  o.tls_version = u.param("tls_version");
  if (auto v = u.choice_param("compat", {std::begin(compat_layouts), std::end(compat_layouts)}))
    o.compat = *v;
  if (u.query.count("shedlock_table")) o.shedlock_table = u.param("shedlock_table");
  o.async_release = u.choice_param("release", {"async", "wait"}).value_or("wait") == "async";
  o.ssl_mode = u.choice_param("ssl_mode",
                              {"disabled", "preferred", "required", "verify_ca", "verify_identity"})
                   .value_or("");
  return o;
}

namespace {
std::shared_ptr<backend> open_with_url(const options& o, std::string url_text) {
  if (!valid_mode(o.mode))
    throw config_error("MySQL mode must be pessimistic, optimistic or advisory (got '" + o.mode +
                       "')");
  if (o.database.empty())
    throw config_error("MySQL options need the database holding the sqlock schema");
  if (o.sessions == 0) throw config_error("MySQL sessions must be at least 1");
  const auto budget = split_budget(o);  // also: the parts must fit
  if (o.connect_timeout <= milliseconds(0) || o.timeout <= milliseconds(0))
    throw config_error("MySQL timeouts must be positive");
  if (url_text.empty()) url_text = shown_url(o);
  if (!o.compat.empty()) return open_compat(o, std::move(url_text));  // a peer's layout
  // The budget as the counter's limit: a connect waits for a place (mysql_driver.cpp).
  auto counter = std::make_shared<sql::connection_counter>(budget.total);
  if (o.mode == "advisory")
    return detail::open_advisory(o, std::move(url_text), budget.statements, counter);
  return detail::open_rows(o, std::move(url_text), budget.statements, counter);
}
}  // namespace

std::shared_ptr<backend> open(const options& opts) {
  return open_with_url(opts, {});
}

}  // namespace mysql

namespace backends {
void register_mysql() {
  auto factory = [](const url& u) -> std::shared_ptr<backend> {
    return mysql::open_with_url(mysql::parse_url(u.original), u.original);
  };
  register_backend("mysql", factory);
  register_backend("mariadb", factory);
}
}  // namespace backends

}  // namespace sqlock
