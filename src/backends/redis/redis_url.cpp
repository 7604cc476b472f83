// Redis URLs: redis://[user:password@]host[:port][/db] and redlock://h1:p1,h2:p2,.../[db]
// turned into redis::options (prefix=, timeout=, connect_timeout=, pool=, release=, compat= through
// the typed URL readers), and the registration of both schemes. Errors show only the redacted URL.
#include <charconv>

#include "sqlock/errors.hpp"
#include "sqlock/redis/redis.hpp"
#include "sqlock/url.hpp"

namespace sqlock {
namespace redis {

namespace {

// The database number of the URL's path ("/3").
int parse_db(const std::string& db, const url& u) {
  int n = -1;
  const auto [p, ec] = std::from_chars(db.data(), db.data() + db.size(), n);
  if (ec != std::errc() || p != db.data() + db.size() || n < 0)
    throw config_error("Redis database number must be a whole number >= 0 (got '" + db + "' in '" +
                       u.redacted() + "')");
  return n;
}

std::shared_ptr<backend> from_url(const url& u, bool redlock) {
  u.check_params({"prefix", "timeout", "connect_timeout", "pool", "compat", "release"});
  if (!u.has_authority || u.hosts.empty())
    throw config_error(std::string("Redis URL needs a host: ") +
                       (redlock ? "redlock://h1:p1,h2:p2,h3:p3" : "redis://host:6379") + " (got '" +
                       u.redacted() + "')");
  options o;
  o.redlock = redlock;
  for (const auto& h : u.hosts)
    o.nodes.push_back(node_address{h.host.empty() ? "127.0.0.1" : h.host, h.port ? h.port : 6379});
  o.user = u.user.value_or("");
  o.password = u.password.value_or("");
  if (!o.user.empty() && o.password.empty())
    throw config_error("Redis URL has a user but no password: redis://user:password@host");
  std::string db = u.path;
  if (!db.empty() && db[0] == '/') db.erase(0, 1);
  if (!db.empty()) o.db = parse_db(db, u);
  o.prefix = u.param("prefix", "sqlock");
  if (auto t = u.duration_param("timeout", milliseconds(1))) o.timeout = *t;
  if (auto t = u.duration_param("connect_timeout", milliseconds(1))) o.connect_timeout = *t;
  if (auto n = u.count_param("pool", 1, 1024)) o.pool = static_cast<std::size_t>(*n);
  o.async_release = u.choice_param("release", {"async", "wait"}).value_or("wait") == "async";
  o.compat = u.choice_param("compat", {"plain"}).value_or("");
  return open(o);
}

}  // namespace

}  // namespace redis

namespace backends {
void register_redis() {
  register_backend("redis", [](const url& u) { return redis::from_url(u, false); });
  register_backend("redlock", [](const url& u) { return redis::from_url(u, true); });
}
}  // namespace backends

}  // namespace sqlock
