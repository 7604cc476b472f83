// `sqlock doctor --patroni REST_URL`: the Patroni cluster behind a PostgreSQL URL as Patroni's
// REST API tells it (GET /cluster, GET /config). Compiled into the HTTP module
// (libsqlock-cli-serve.so, which links cpp-httplib), so that only a doctor run asking for it
// loads the HTTP library; http_module.cpp loads it.
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/url.hpp"

namespace sqlock::cli {
namespace {

using json = nlohmann::json;
using clock = std::chrono::steady_clock;

// One GET of Patroni's REST API at `base` on `cli` (one kept-alive connection for the report's
// requests), bounded by `deadline`; the parsed body.
json get(httplib::Client& cli, const std::string& base, const std::string& path,
         steady_time deadline) {
  const auto left =
      std::max<clock::duration>(deadline - clock::now(), std::chrono::milliseconds(1));
  cli.set_connection_timeout(left);
  cli.set_read_timeout(left);
  cli.set_write_timeout(left);
  auto res = cli.Get(path);
  if (!res)
    throw error("Patroni REST API at " + redact_url(base) + ": no answer (" +
                httplib::to_string(res.error()) + " error)");
  if (res->status != 200)
    throw error("Patroni REST API at " + redact_url(base) + path + ": HTTP " +
                std::to_string(res->status));
  auto body = json::parse(res->body, nullptr, false);
  if (body.is_discarded())
    throw error("Patroni REST API at " + redact_url(base) + path + ": not JSON");
  return body;
}

std::string text_of(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

}  // namespace

std::vector<finding> patroni_findings(const std::string& rest_url, const std::string& store_url,
                                      steady_time deadline) {
  std::vector<finding> out;
  run_check(out, "patroni", [&] {
    httplib::Client cli(rest_url);
    cli.set_keep_alive(true);
    const auto cluster = get(cli, rest_url, "/cluster", deadline);
    const auto config = get(cli, rest_url, "/config", deadline);
    const bool sync_mode = config.value("synchronous_mode", false);
    // The URL's hosts, to tell which members a client of it can follow a failover to.
    std::set<std::string> listed;
    for (const auto& h : url::parse(store_url).hosts)
      listed.insert(h.host + ":" + std::to_string(h.port ? h.port : 5432));
    const auto& members = cluster.value("members", json::array());
    std::ostringstream list;
    std::vector<std::string> unreachable;
    int leaders = 0, sync_standbys = 0;
    for (const auto& m : members) {
      const auto role = text_of(m, "role");
      const auto state = text_of(m, "state");
      leaders += role == "leader" || role == "standby_leader";
      sync_standbys += role == "sync_standby";
      list << (list.tellp() > 0 ? ", " : "") << text_of(m, "name") << " " << role << " " << state;
      if (m.contains("lag") && m["lag"].is_number()) list << " (lag " << m["lag"].dump() << " B)";
      const auto where =
          text_of(m, "host") + ":" + (m.contains("port") ? m["port"].dump() : "5432");
      if (!listed.count(where)) unreachable.push_back(text_of(m, "name") + " at " + where);
    }
    const auto head = "Patroni cluster of " + std::to_string(members.size()) +
                      " members: " + list.str() + "; synchronous_mode " +
                      (sync_mode ? "on" : "off");
    if (leaders != 1) {
      out.push_back({"patroni", finding_status::unsafe,
                     head + ": " + std::to_string(leaders) +
                         " leaders, so no member accepts writes for certain; wait for Patroni "
                         "to elect one"});
    } else if (!unreachable.empty()) {
      std::string names;
      for (const auto& u : unreachable) names += (names.empty() ? "" : ", ") + u;
      out.push_back({"patroni", finding_status::warn,
                     head + "; the URL does not list " + names +
                         ": after a failover to it this URL cannot follow (list every member "
                         "with target_session_attrs=read-write)"});
    } else if (!sync_mode || sync_standbys == 0) {
      out.push_back({"patroni", finding_status::warn,
                     head + ": no synchronous standby, so a failover may lose the last holds "
                            "(a name held twice for up to a lease) and the last fences"});
    } else {
      out.push_back({"patroni", finding_status::ok, head});
    }
  });
  return out;
}

}  // namespace sqlock::cli
