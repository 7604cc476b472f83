// The Redis checks of `sqlock doctor`, one server at a time.
#include "redis_diagnostics.hpp"

#include <chrono>
#include <map>

#include "sqlock/errors.hpp"

namespace sqlock::redis::detail {

namespace {

using st = finding_status;

// INFO's "key:value" lines.
std::map<std::string, std::string> info_fields(const std::string& text) {
  std::map<std::string, std::string> out;
  std::size_t at = 0;
  while (at < text.size()) {
    auto end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    auto line = text.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (auto colon = line.find(':'); colon != std::string::npos && line[0] != '#')
      out[line.substr(0, colon)] = line.substr(colon + 1);
    at = end + 1;
  }
  return out;
}

std::string label(const node_address& a) {
  return a.host + ":" + std::to_string(a.port);
}

}  // namespace

redis_diagnostics::redis_diagnostics(std::vector<node_address> nodes, const settings& s,
                                     bool redlock)
    : nodes_(std::move(nodes)), s_(s), redlock_(redlock) {}

std::vector<finding> redis_diagnostics::check(steady_time deadline) {
  std::vector<finding> out;
  std::size_t answered = 0;
  for (const auto& a : nodes_) {
    try {
      node_checks(a, deadline, out);
      ++answered;
    } catch (const connection_error& e) {
      if (!redlock_) throw;  // one server: unreachable is the report's end (exit 69)
      out.push_back({"server " + label(a), st::warn, std::string("unreachable: ") + e.what()});
    }
  }
  if (redlock_) {
    const auto quorum = nodes_.size() / 2 + 1;
    const bool ok = answered >= quorum;
    out.push_back({"quorum", ok ? (answered == nodes_.size() ? st::ok : st::warn) : st::unsafe,
                   std::to_string(answered) + " of " + std::to_string(nodes_.size()) +
                       " masters answer, quorum " + std::to_string(quorum) +
                       (ok ? "" : ": no lock can be granted") +
                       "; Redlock's fences come from the answering majority and may repeat "
                       "after a master restarts without persistence"});
  }
  return out;
}

void redis_diagnostics::node_checks(const node_address& a, steady_time deadline,
                                    std::vector<finding>& out) {
  connection c(a, s_, exchange_bound(deadline, s_.timeout));
  auto info = [&](const char* section) {
    auto r = c.command({"INFO", section});
    return info_fields(reply_view{r.get()}.str());
  };
  const auto where = label(a);
  const auto server = info("server");
  const auto repl = info("replication");
  const auto persist = info("persistence");
  const auto get = [](const std::map<std::string, std::string>& m, const char* k) {
    auto it = m.find(k);
    return it == m.end() ? std::string() : it->second;
  };
  const auto role = get(repl, "role");
  const auto replicas = get(repl, "connected_slaves");
  const auto prefix = redlock_ ? std::string(" ") + where : std::string();
  out.push_back({"server" + prefix, st::ok,
                 "Redis " + get(server, "redis_version") + " at " + where + ", role " + role});
  if (role != "master") {
    out.push_back(
        {"role" + prefix, st::unsafe,
         "the server at " + where + " is a replica (read-only): point the URL at the master"});
  } else if (!replicas.empty() && replicas != "0") {
    out.push_back({"replication" + prefix, redlock_ ? st::ok : st::warn,
                   replicas + " replica(s), replicated asynchronously: after a failover "
                              "(Sentinel) the new master may lack the last holds (a name held "
                              "twice for up to a lease) and hand out fences again"});
  } else {
    out.push_back({"replication" + prefix, st::ok, "no replicas"});
  }
  // CONFIG may be renamed away on a managed server: INFO persistence tells the AOF alone then.
  std::string fsync, save;
  try {
    auto r = c.command({"CONFIG", "GET", "appendfsync"});
    if (reply_view{r.get()}.size("CONFIG") == 2) fsync = reply_view{r.get()}.at(1).str();
    auto s = c.command({"CONFIG", "GET", "save"});
    if (reply_view{s.get()}.size("CONFIG") == 2) save = reply_view{s.get()}.at(1).str();
  } catch (const connection_error&) {
    throw;
  } catch (const error&) {
  }
  const bool aof = get(persist, "aof_enabled") == "1";
  std::string msg = std::string("appendonly ") + (aof ? "yes" : "no") +
                    (!aof || fsync.empty() ? "" : " (appendfsync " + fsync + ")") + ", save '" +
                    save + "'";
  auto status = st::ok;
  if (aof && fsync == "always") {
    msg += ": holds and fences survive a restart";
  } else if (aof) {
    status = st::warn;
    msg +=
        ": a crash may lose the last second of writes: a hold, and fences handed out then "
        "may be handed out again";
  } else if (!save.empty()) {
    status = st::warn;
    msg +=
        ": a crash loses the writes since the last snapshot: holds vanish and fences may "
        "repeat (fencing is not safe across a crash)";
  } else {
    status = st::warn;
    msg += ": nothing is persisted: a restart forgets every hold and restarts the fences";
  }
  out.push_back({"persistence" + prefix, status, msg});
  // The server's clock (TIME): the report's one wall-clock reading.
  const auto before = std::chrono::system_clock::now();
  auto t = c.command({"TIME"});
  const auto after = std::chrono::system_clock::now();
  reply_view v{t.get()};
  const double server_s = static_cast<double>(v.at(0).integer("TIME")) +
                          static_cast<double>(v.at(1).integer("TIME")) / 1e6;
  out.push_back(clock_finding("clock" + prefix, before, after, server_s,
                              "keys expire on the server's clock"));
}

}  // namespace sqlock::redis::detail
