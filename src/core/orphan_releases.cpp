// A thread that releases (name, owner) pairs left by acquires of unknown outcome.
#include "orphan_releases.hpp"

#include <algorithm>

#include "sqlock/random.hpp"

namespace sqlock::detail {

namespace {
using clock = std::chrono::steady_clock;
// Backoff between tries of one pair while the store does not answer.
constexpr milliseconds retry_initial{100};
constexpr milliseconds retry_cap{2000};
}  // namespace

orphan_releases::orphan_releases(backend& b, milliseconds attempt_bound)
    : b_(b), bound_(attempt_bound) {}

orphan_releases::~orphan_releases() {
  {
    std::lock_guard g(m_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void orphan_releases::add(const lock_request& req, steady_time until) noexcept {
  lease_info l{req.name, req.owner, 0, nullptr};
  l.kind = req.kind;
  add(l, until);
}

void orphan_releases::add(const lease_info& lease, steady_time until) noexcept {
  try {
    std::lock_guard g(m_);
    if (stop_) return;
    // The first try after a pause too: a program that ends right after the failed call (the
    // CLI) is not held up by a try under way; its orphan then ends with its lease.
    pending_.push_back({lease, until, clock::now() + retry_initial});
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  } catch (...) {
    return;  // best effort: no memory or thread to spare, the lease ends it
  }
  cv_.notify_one();
}

void orphan_releases::loop() {
  std::unique_lock lk(m_);
  while (!stop_) {
    if (pending_.empty()) {
      cv_.wait(lk, [&] { return stop_ || !pending_.empty(); });
      continue;
    }
    auto first =
        std::min_element(pending_.begin(), pending_.end(),
                         [](const pending& a, const pending& b) { return a.next < b.next; });
    const auto now = clock::now();
    if (now < first->next) {
      // A copy: wait_until reads its time point while unlocked, and an add() meanwhile may
      // reallocate pending_ (ASan: heap-use-after-free in CI's asan_short).
      const auto next = first->next;
      cv_.wait_until(lk, next);
      continue;
    }
    pending p = std::move(*first);
    pending_.erase(first);
    if (now >= p.until) continue;  // the lease has ended by itself
    lk.unlock();
    bool answered = false;
    try {
      // True or false, the store answered: released, or nothing of this owner was there.
      (void)b_.release(p.lease, std::min<steady_time>(p.until, now + bound_));
      answered = true;
    } catch (...) {
      // Not reached, or no answer: try again after a pause.
    }
    lk.lock();
    if (!answered) {
      p.next = clock::now() + backoff_delay(p.tries++, retry_initial, retry_cap);
      pending_.push_back(std::move(p));
    }
  }
}

}  // namespace sqlock::detail
