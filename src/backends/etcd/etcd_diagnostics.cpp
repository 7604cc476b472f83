// The etcd checks of `sqlock doctor`: members, leader, quorum.
#include "etcd_diagnostics.hpp"

#include "sqlock/errors.hpp"

namespace sqlock::etcd::detail {

namespace {
using st = finding_status;

std::string text(const json& j, const char* key) {
  if (!j.contains(key)) return {};
  const auto& v = j.at(key);
  return v.is_string() ? v.get<std::string>() : v.dump();
}
}  // namespace

std::vector<finding> etcd_diagnostics::check(steady_time deadline) {
  std::vector<finding> out;
  const auto status = gw_.call("maintenance/status", json::object(), deadline);
  const auto members = gw_.call("cluster/member/list", json::object(), deadline);
  const auto leader = text(status, "leader");
  std::size_t voters = 0;
  std::string leader_name = "none", names;
  if (members.contains("members"))
    for (const auto& m : members.at("members")) {
      const bool learner = m.contains("isLearner") && m.at("isLearner").get<bool>();
      if (!learner) ++voters;
      const auto name = text(m, "name");
      names += (names.empty() ? "" : ", ") + name + (learner ? " (learner)" : "");
      if (text(m, "ID") == leader) leader_name = name;
    }
  out.push_back({"server", st::ok,
                 "etcd " + text(status, "version") + ", raft term " + text(status, "raftTerm") +
                     ", leader " + leader_name});
  if (leader.empty() || leader == "0") {
    out.push_back({"leader", st::unsafe, "no leader: no lock can be granted or renewed"});
  }
  const auto quorum = voters / 2 + 1;
  if (voters < 3) {
    out.push_back({"members", st::warn,
                   std::to_string(voters) + " voting member(s) (" + names +
                       "): no quorum survives the loss of a member; leases and keys are kept "
                       "on disk across its restart"});
  } else {
    std::string msg = std::to_string(voters) + " voting members (" + names + "), quorum " +
                      std::to_string(quorum) + ": locks survive the loss of " +
                      std::to_string(voters - quorum) + " member(s)";
    auto s = st::ok;
    if (o_.endpoints.size() < voters) {
      s = st::warn;
      msg += "; the URL lists " + std::to_string(o_.endpoints.size()) +
             " of them: the client cannot fail over to the others";
    }
    out.push_back({"members", s, msg});
  }
  return out;
}

}  // namespace sqlock::etcd::detail
