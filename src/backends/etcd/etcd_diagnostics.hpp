// `sqlock doctor` for etcd (sqlock/doctor.hpp): the cluster's members, its leader and raft
// term, the quorum, and the members the URL lists.
#pragma once

#include "etcd_connection.hpp"
#include "sqlock/doctor.hpp"

namespace sqlock::etcd::detail {

/// The checks of one etcd backend, through its gateway (owned by the backend).
class etcd_diagnostics final : public store_diagnostics {
 public:
  etcd_diagnostics(gateway& gw, const options& o) : gw_(gw), o_(o) {}
  std::vector<finding> check(steady_time deadline) override;

 private:
  gateway& gw_;
  const options o_;
};

}  // namespace sqlock::etcd::detail
