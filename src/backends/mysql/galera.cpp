// Galera membership and the refusal of GET_LOCK modes on a Galera node (see galera.hpp).
#include "galera.hpp"

#include "mysql_driver.hpp"
#include "sqlock/errors.hpp"

namespace sqlock::mysql::detail {

namespace {
constexpr const char* unknown_system_variable = "1193";  // MySQL has no wsrep_on
}

std::string galera_node::describe() const {
  return "a Galera node of a " + cluster_size + "-node cluster (node state " + state +
         ", cluster " + status + ")";
}

bool galera_node::serving() const {
  return status == "Primary" && (state == "Synced" || state == "Donor/Desynced");
}

std::optional<galera_node> galera_membership(sql::engine_backend& b, steady_time deadline) {
  static const sql::operation wsrep_on{"mysql_wsrep_on", {"SELECT @@global.wsrep_on"}};
  static const sql::operation membership{
      "mysql_wsrep_membership",
      {"SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE "
       "VARIABLE_NAME IN ('WSREP_CLUSTER_SIZE', 'WSREP_LOCAL_STATE_COMMENT', "
       "'WSREP_CLUSTER_STATUS')"}};
  try {
    if (!sql::says_true(b.run(wsrep_on, {}, deadline))) return std::nullopt;
  } catch (const backend_error& e) {
    if (e.code() == unknown_system_variable) return std::nullopt;
    throw;
  }
  galera_node n{"?", "?", "?"};
  for (const auto& r : b.run(membership, {}, deadline)) {
    if (r.size() < 2 || !r[0] || !r[1]) continue;
    if (*r[0] == "WSREP_CLUSTER_SIZE") n.cluster_size = *r[1];
    if (*r[0] == "WSREP_LOCAL_STATE_COMMENT") n.state = *r[1];
    if (*r[0] == "WSREP_CLUSTER_STATUS") n.status = *r[1];
  }
  return n;
}

bool takes_get_lock(const options& o) {
  return o.compat.empty() ? o.mode == "advisory" : o.compat != "shedlock";
}

void refuse_galera(sql::engine_backend& b, const std::string& where, const std::string& what,
                   steady_time deadline) {
  const auto node = galera_membership(b, check_bound(deadline));
  if (!node) return;
  throw config_error("the MySQL server at " + where + " is " + node->describe() + ": " + what +
                     " takes GET_LOCK locks, which are node-local on Galera (a lock taken "
                     "through one node does not exclude clients of another); use "
                     "mode=pessimistic or mode=optimistic, whose rows replicate and certify "
                     "across the cluster");
}

}  // namespace sqlock::mysql::detail
