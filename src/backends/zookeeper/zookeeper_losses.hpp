// The holds of expired ZooKeeper sessions, reported lost from a thread of their own: never from
// the client's completion thread, and never under a lock a loss listener could need. A listener
// may destroy the backend from that thread; the thread then ends on its own.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "zookeeper_queue.hpp"

namespace sqlock::zookeeper::detail {

class loss_reporter {
 public:
  /// `take(epoch)` removes and returns the nodes of the expired session `epoch`; `lost(rec)`
  /// reports the hold of one of them lost. Both run on the reporter's thread.
  loss_reporter(std::function<std::vector<node_record>(std::uint64_t epoch)> take,
                std::function<void(const node_record&)> lost);
  /// stop().
  ~loss_reporter();
  loss_reporter(const loss_reporter&) = delete;
  loss_reporter& operator=(const loss_reporter&) = delete;

  /// What the session keeper calls when session `epoch` expired (from any thread; it may
  /// outlive the reporter and then does nothing).
  std::function<void(std::uint64_t epoch)> sink() const;
  /// Ends the thread: no report starts after it returns (one under way on another thread
  /// finishes first). From the thread itself (a listener destroying the backend) the thread
  /// is left to end on its own after the report that called it.
  void stop();

 private:
  struct state;
  static void run(const std::shared_ptr<state>& st);
  std::shared_ptr<state> st_;
  std::thread thread_;
};

}  // namespace sqlock::zookeeper::detail
