// The loss reporter's thread (see zookeeper_losses.hpp).
#include "zookeeper_losses.hpp"

namespace sqlock::zookeeper::detail {

// Shared with the thread, which may outlive the reporter when the backend is destroyed from it.
struct loss_reporter::state {
  std::function<std::vector<node_record>(std::uint64_t)> take;
  std::function<void(const node_record&)> lost;
  std::mutex m;
  std::condition_variable cv;
  std::deque<std::uint64_t> epochs;
  bool stop = false;
};

loss_reporter::loss_reporter(std::function<std::vector<node_record>(std::uint64_t epoch)> take,
                             std::function<void(const node_record&)> lost)
    : st_(std::make_shared<state>()) {
  st_->take = std::move(take);
  st_->lost = std::move(lost);
  thread_ = std::thread([st = st_] { run(st); });
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
    }
    st->cv.notify_all();
  };
}

void loss_reporter::stop() {
  {
    std::lock_guard g(st_->m);
    st_->stop = true;
  }
  st_->cv.notify_all();
  if (!thread_.joinable()) return;
  if (thread_.get_id() == std::this_thread::get_id())
    thread_.detach();  // called by a loss listener: the thread ends on its own
  else
    thread_.join();
}

void loss_reporter::run(const std::shared_ptr<state>& st) {
  std::unique_lock lk(st->m);
  for (;;) {
    st->cv.wait(lk, [&] { return st->stop || !st->epochs.empty(); });
    if (st->stop) return;
    auto epoch = st->epochs.front();
    st->epochs.pop_front();
    lk.unlock();
    for (const auto& rec : st->take(epoch)) {
      st->lost(rec);
      std::lock_guard g(st->m);
      if (st->stop) return;  // the backend was destroyed by a listener
    }
    lk.lock();
  }
}

}  // namespace sqlock::zookeeper::detail
