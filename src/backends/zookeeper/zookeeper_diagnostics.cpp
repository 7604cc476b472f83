// The ZooKeeper checks of `sqlock doctor`.
#include "zookeeper_diagnostics.hpp"

#include <algorithm>

#include "sqlock/errors.hpp"

namespace sqlock::zookeeper::detail {

namespace {

using st = finding_status;

// The voting members of a dynamic configuration ("server.N=host:peer:election:participant;
// client" lines; observers are not counted).
std::vector<std::string> voters(const std::string& config) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < config.size()) {
    auto end = config.find('\n', at);
    if (end == std::string::npos) end = config.size();
    const auto line = config.substr(at, end - at);
    if (line.rfind("server.", 0) == 0 && line.find(":observer") == std::string::npos) {
      auto client = line.find(';');
      out.push_back(client == std::string::npos ? line : line.substr(client + 1));
    }
    at = end + 1;
  }
  return out;
}

}  // namespace

std::vector<finding> zk_diagnostics::check(steady_time deadline) {
  std::vector<finding> out;
  const auto until = exchange_bound(deadline, o_.timeout);
  auto s = sessions_.live(until);
  const char* current = zoo_get_current_server(s->zh);
  out.push_back({"server", st::ok,
                 std::string("ZooKeeper at ") + (current ? current : "?") + ", session timeout " +
                     human_duration(milliseconds(zoo_recv_timeout(s->zh))) +
                     " (negotiated): a hold lasts while its session does"});
  run_check(out, "ensemble", [&] {
    std::string config;
    Stat stat{};
    const int rc = get_data(*s, "/zookeeper/config", until, config, stat);
    const auto listed =
        static_cast<std::size_t>(std::count(o_.hosts.begin(), o_.hosts.end(), ',') + 1);
    auto members = voters(rc == ZOK ? config : std::string());
    const std::size_t n = members.empty() ? listed : members.size();
    const std::string source = members.empty()
                                   ? " (from the URL: /zookeeper/config lists no members)"
                                   : " (from /zookeeper/config)";
    if (n < 3) {
      out.push_back({"ensemble", st::warn,
                     std::to_string(n) + " server(s)" + source +
                         ": no quorum survives the loss of a server; holds are kept while it "
                         "runs and end with their sessions"});
      return;
    }
    const auto quorum = n / 2 + 1;
    std::string msg = std::to_string(n) + " voting members" + source + ", quorum " +
                      std::to_string(quorum) + ": locks survive the loss of " +
                      std::to_string(n - quorum) + " server(s)";
    auto status = st::ok;
    if (listed < n) {
      status = st::warn;
      msg += "; the URL lists " + std::to_string(listed) +
             " of them: the client cannot fail over to the others";
    }
    out.push_back({"ensemble", status, msg});
  });
  return out;
}

}  // namespace sqlock::zookeeper::detail
