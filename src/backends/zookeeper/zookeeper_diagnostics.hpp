// `sqlock doctor` for ZooKeeper (sqlock/doctor.hpp): the server the session reached, the
// ensemble's members from /zookeeper/config (the four-letter words may be disabled) and its
// quorum, the negotiated session timeout.
#pragma once

#include "sqlock/doctor.hpp"
#include "sqlock/zookeeper/zookeeper.hpp"
#include "zookeeper_keeper.hpp"

namespace sqlock::zookeeper::detail {

/// The checks of one ZooKeeper backend, on its session (`sessions`, owned by the backend).
class zk_diagnostics final : public store_diagnostics {
 public:
  zk_diagnostics(session_keeper& sessions, const options& o) : sessions_(sessions), o_(o) {}
  std::vector<finding> check(steady_time deadline) override;

 private:
  session_keeper& sessions_;
  const options o_;
};

}  // namespace sqlock::zookeeper::detail
