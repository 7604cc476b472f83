// The zookeeper:// URL factory: hosts, root and options read with the typed URL readers; the
// checks of a backend's options and root path (zookeeper_url.hpp).
#include "zookeeper_url.hpp"

#include "sqlock/errors.hpp"
#include "sqlock/url.hpp"
#include "sqlock/zookeeper/zookeeper.hpp"
#include "zookeeper_layout.hpp"

namespace sqlock {

namespace zookeeper::detail {

options checked_options(options o) {
  if (o.hosts.empty()) throw config_error("ZooKeeper hosts must not be empty");
  if (o.session_timeout.count() <= 0) throw config_error("ZooKeeper session_timeout must be > 0");
  if (o.connect_timeout.count() < 0) throw config_error("ZooKeeper connect_timeout must be >= 0");
  if (o.timeout.count() <= 0) throw config_error("ZooKeeper timeout must be > 0");
  if (o.creator_acl && o.user.empty())
    throw config_error("ZooKeeper acl=creator needs a user:password in the URL");
  if (!o.user.empty() && o.user.find(':') != std::string::npos)
    throw config_error("ZooKeeper digest user must not contain ':'");
  return o;
}

std::string normalized_root(std::string r) {
  if (r.empty()) r = "/sqlock";
  if (r.front() != '/') throw config_error("ZooKeeper root must start with '/'");
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  std::size_t i = 1;
  while (r.size() > 1 && i <= r.size()) {
    auto j = r.find('/', i);
    if (j == std::string::npos) j = r.size();
    auto part = r.substr(i, j - i);
    if (part.empty() || part == "." || part == ".." || (i == 1 && part == "zookeeper"))
      throw config_error("ZooKeeper root '" + r + "' has an invalid component '" + part + "'");
    i = j + 1;
  }
  return r;
}

}  // namespace zookeeper::detail

namespace backends {
void register_zookeeper() {
  register_backend("zookeeper", [](const url& u) -> std::shared_ptr<backend> {
    u.check_params({"session_timeout", "connect_timeout", "timeout", "acl", "compat", "release"});
    if (u.hosts.empty())
      throw config_error("ZooKeeper URL needs hosts: zookeeper://h1:2181,h2:2181/root (got '" +
                         u.redacted() + "')");
    zookeeper::options o;
    o.hosts.clear();
    for (const auto& h : u.hosts) {
      if (h.host.empty()) throw config_error("ZooKeeper URL has an empty host: " + u.redacted());
      if (!o.hosts.empty()) o.hosts += ",";
      bool v6 = h.host.find(':') != std::string::npos;
      o.hosts += (v6 ? "[" + h.host + "]" : h.host) + ":" + std::to_string(h.port ? h.port : 2181);
    }
    o.compat = u.choice_param("compat", zookeeper::detail::compat_values()).value_or("");
    // A peer's layout names its locks from the root of the tree unless the URL gives a path.
    const bool no_path = u.path.empty() || u.path == "/";
    o.root = no_path ? std::string(o.compat.empty() ? "/sqlock" : "/") : u.path;
    const milliseconds at_least(1);
    if (auto t = u.duration_param("session_timeout", at_least)) o.session_timeout = *t;
    if (auto t = u.duration_param("connect_timeout", at_least)) o.connect_timeout = *t;
    if (auto t = u.duration_param("timeout", at_least)) o.timeout = *t;
    if (u.user) o.user = *u.user;
    if (u.password) o.password = *u.password;
    if (!o.user.empty() && o.password.empty())
      throw config_error("ZooKeeper digest authentication needs user:password@ (got only a user)");
    auto acl =
        u.choice_param("acl", {"open", "creator"}).value_or(o.user.empty() ? "open" : "creator");
    o.creator_acl = acl == "creator";
    o.async_release = u.choice_param("release", {"async", "wait"}).value_or("wait") == "async";
    return zookeeper::open(o);
  });
}
}  // namespace backends

}  // namespace sqlock
