#include "etcd_release.hpp"

#include <utility>

#include "sqlock/errors.hpp"

namespace sqlock::etcd::detail {

namespace {
using clock = std::chrono::steady_clock;
}

release_sender::release_sender(std::function<void(const pending_release&, steady_time)> send,
                               milliseconds timeout)
    : send_(std::move(send)), timeout_(timeout) {}

release_sender::~release_sender() {
  {
    std::lock_guard g(m_);
    stop_ = true;
    flush_until_ = clock::now() + timeout_;
  }
  cv_.notify_all();
  if (th_.joinable()) th_.join();
}

void release_sender::post(pending_release r, steady_time deadline) {
  std::unique_lock lk(m_);
  cv_.wait_until(lk, deadline, [&] { return count_ < max_pending; });
  ++on_way_[r.name];
  ++count_;
  queued_.push_back(std::move(r));
  if (!th_.joinable()) th_ = std::thread([this] { run(); });
  lk.unlock();
  cv_.notify_all();
}

bool release_sender::settled(std::string_view name, steady_time deadline) {
  std::unique_lock lk(m_);
  return cv_.wait_until(lk, deadline, [&] { return on_way_.find(name) == on_way_.end(); });
}

// Sends the queued releases one after another, off the callers' paths; at the stop, what is
// still queued is sent before the thread ends, within one timeout in all (what is left then
// ends with its lease, which nobody renews any more).
void release_sender::run() {
  std::unique_lock lk(m_);
  for (;;) {
    cv_.wait(lk, [&] { return stop_ || !queued_.empty(); });
    if (queued_.empty() || (stop_ && clock::now() >= flush_until_)) return;
    pending_release r = std::move(queued_.front());
    queued_.pop_front();
    const auto deadline =
        stop_ ? std::min(flush_until_, clock::now() + timeout_) : clock::now() + timeout_;
    lk.unlock();
    try {
      send_(r, deadline);
    } catch (const std::exception&) {
      // Unknown or refused: give_up has left the key's lease to be revoked in the background,
      // or to end at its TTL.
    }
    lk.lock();
    if (auto it = on_way_.find(r.name); it != on_way_.end() && --it->second == 0) on_way_.erase(it);
    --count_;
    cv_.notify_all();
  }
}

}  // namespace sqlock::etcd::detail
