// The loss reporter's reports (see zookeeper_losses.hpp).
#include "zookeeper_losses.hpp"

#include <chrono>
#include <deque>
#include <mutex>

#include "sqlock/backend/background.hpp"

namespace sqlock::zookeeper::detail {

// Shared with the reports, which may outlive the reporter when the backend is destroyed from
// one of them.
struct loss_reporter::state {
  std::function<std::vector<node_record>(std::uint64_t)> take;
  std::function<void(const node_record&)> lost;
  task_gate gate;                    // closed by stop()
  std::mutex m;                      // guards the rest
  std::deque<std::uint64_t> epochs;  // expired, not reported yet
  bool queued = false;               // a report is on the driver's queue or running

  // Reports the expired sessions' holds until none is left.
  void report() {
    std::unique_lock lk(m);
    while (!epochs.empty()) {
      auto epoch = epochs.front();
      epochs.pop_front();
      lk.unlock();
      for (const auto& rec : take(epoch)) {
        if (gate.closed()) return;  // the backend was destroyed by a listener
        lost(rec);
      }
      lk.lock();
    }
    queued = false;
  }
};

loss_reporter::loss_reporter(std::function<std::vector<node_record>(std::uint64_t epoch)> take,
                             std::function<void(const node_record&)> lost)
    : st_(std::make_shared<state>()) {
  st_->take = std::move(take);
  st_->lost = std::move(lost);
}

loss_reporter::~loss_reporter() {
  stop();
}

std::function<void(std::uint64_t)> loss_reporter::sink() const {
  return [weak = std::weak_ptr<state>(st_)](std::uint64_t epoch) {
    auto st = weak.lock();
    if (!st) return;
    {
      std::lock_guard g(st->m);
      st->epochs.push_back(epoch);
      if (std::exchange(st->queued, true)) return;  // the report under way takes it too
    }
    run_in_background(std::chrono::steady_clock::now(),
                      [st] { st->gate.run([&] { st->report(); }); });
  };
}

void loss_reporter::stop() {
  st_->gate.close();
}

}  // namespace sqlock::zookeeper::detail
