// `sqlock doctor` for Redis and Redlock (sqlock/doctor.hpp): each server's version and role,
// its replicas, its persistence (appendonly, save) and what that means for holds and fences,
// its clock; for Redlock how many masters answer against the quorum.
#pragma once

#include <vector>

#include "redis_connection.hpp"
#include "sqlock/doctor.hpp"

namespace sqlock::redis::detail {

/// The checks of one Redis store: the servers `nodes`, reached with `s`.
class redis_diagnostics final : public store_diagnostics {
 public:
  redis_diagnostics(std::vector<node_address> nodes, const settings& s, bool redlock);
  std::vector<finding> check(steady_time deadline) override;

 private:
  void node_checks(const node_address& a, steady_time deadline, std::vector<finding>& out);

  const std::vector<node_address> nodes_;
  const settings s_;
  const bool redlock_;
};

}  // namespace sqlock::redis::detail
