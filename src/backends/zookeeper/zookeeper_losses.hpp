// The holds of expired ZooKeeper sessions, reported lost on a driver thread
// (sqlock::run_in_background, no thread of its own): never from the client's completion thread,
// and never under a lock a loss listener could need. A listener may destroy the backend from
// that report.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "zookeeper_queue.hpp"

namespace sqlock::zookeeper::detail {

class loss_reporter {
 public:
  /// `take(epoch)` removes and returns the nodes of the expired session `epoch`; `lost(rec)`
  /// reports the hold of one of them lost. Both run on a driver thread, one report at a time.
  loss_reporter(std::function<std::vector<node_record>(std::uint64_t epoch)> take,
                std::function<void(const node_record&)> lost);
  /// stop().
  ~loss_reporter();
  loss_reporter(const loss_reporter&) = delete;
  loss_reporter& operator=(const loss_reporter&) = delete;

  /// What the session keeper calls when session `epoch` expired (from any thread; it may
  /// outlive the reporter and then does nothing).
  std::function<void(std::uint64_t epoch)> sink() const;
  /// No report starts after it returns (one under way on another thread finishes first).
  /// From a report itself (a listener destroying the backend) the report ends after the
  /// listener returns.
  void stop();

 private:
  struct state;
  std::shared_ptr<state> st_;
};

}  // namespace sqlock::zookeeper::detail
