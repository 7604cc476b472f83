// The etcd:// (etcds://) URL: the options it names.
#include <algorithm>

#include "sqlock/errors.hpp"
#include "sqlock/etcd/etcd.hpp"
#include "sqlock/url.hpp"

namespace sqlock::etcd {

/// Options from an etcd:// (or etcds://, TLS) URL.
options options_from_url(const url& u) {
  u.check_params({"timeout", "cacert", "cert", "key", "tls", "transport", "release"});
  options o;
  if (u.hosts.empty())
    throw config_error("etcd URL needs at least one host: etcd://h1:2379,h2:2379/prefix");
  for (const auto& h : u.hosts) {
    if (h.host.empty()) throw config_error("etcd URL has an empty host in '" + u.redacted() + "'");
    o.endpoints.push_back({h.host, h.port > 0 ? h.port : 2379});
  }
  std::string prefix = u.path;
  while (!prefix.empty() && prefix.front() == '/') prefix.erase(0, 1);
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  o.prefix = prefix.empty() ? "sqlock" : prefix;
  if (u.user) o.user = *u.user;
  if (u.password) o.password = *u.password;
  if (!o.password.empty() && o.user.empty())
    throw config_error("etcd URL has a password but no user name: etcd://user:pass@host/");
  o.timeout =
      u.duration_param("timeout", milliseconds(1), std::chrono::hours(1)).value_or(o.timeout);
  o.tls = u.scheme == "etcds" || u.flag_param("tls").value_or(false);
  o.ca_file = u.param("cacert");
  o.cert_file = u.param("cert");
  o.key_file = u.param("key");
  if (!o.tls && (!o.ca_file.empty() || !o.cert_file.empty()))
    throw config_error("etcd URL sets TLS files but not TLS: use etcds:// or tls=on");
  if (o.cert_file.empty() != o.key_file.empty())
    throw config_error("etcd URL needs both cert= and key= for a client certificate");
  if (u.choice_param("transport", {"grpc", "json"}).value_or("grpc") == "json")
    o.transport = transport_kind::json;
  o.async_release = u.choice_param("release", {"async", "wait"}).value_or("wait") == "async";
  return o;
}

}  // namespace sqlock::etcd
