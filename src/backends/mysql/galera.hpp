// Galera membership of a MySQL/MariaDB server, and connect()'s refusal of GET_LOCK modes on a
// Galera node: GET_LOCK locks are node-local there, so a lock taken through node 1 does not
// exclude a client of node 2. The row modes' tables replicate (writes certify cluster-wide).
#pragma once

#include <optional>
#include <string>

#include "sql/sql_engine.hpp"
#include "sqlock/mysql/mysql.hpp"

namespace sqlock::mysql::detail {

/// What a Galera node says of its cluster (wsrep status variables).
struct galera_node {
  std::string cluster_size;  ///< wsrep_cluster_size: nodes in this node's view
  std::string state;         ///< wsrep_local_state_comment: Synced, Donor/Desynced, Joining...
  std::string status;        ///< wsrep_cluster_status: Primary, or non-Primary (no quorum)
  /// "a Galera node of a 3-node cluster (node state Synced, cluster Primary)".
  std::string describe() const;
  /// Synced (or a donor still serving) in the Primary component: it serves writes.
  bool serving() const;
};

/// The server's Galera membership, or nullopt when it is no Galera node (wsrep_on off, or a
/// MySQL server without the variable), by `deadline`.
std::optional<galera_node> galera_membership(sql::engine_backend& b, steady_time deadline);

/// True when `o` takes GET_LOCK locks: mode=advisory, or compat=distributedlock / compat=raw.
bool takes_get_lock(const options& o);

/// Throws config_error when the server of `b` (at `where`) is a Galera node: `what` (the mode
/// in the URL) would hold node-local locks there.
void refuse_galera(sql::engine_backend& b, const std::string& where, const std::string& what,
                   steady_time deadline);

}  // namespace sqlock::mysql::detail
