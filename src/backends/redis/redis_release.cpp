// Releases that do not wait: the book of one server and the background flush (see
// redis_release.hpp).
#include "redis_release.hpp"

#include <algorithm>

namespace sqlock::redis::detail {

namespace {
using clock = std::chrono::steady_clock;

// The pause before retry `tries` (25 ms doubling to 1 s).
milliseconds retry_pause(unsigned tries) {
  return std::min(milliseconds(25) * (1u << std::min(tries, 6u)), milliseconds(1000));
}
}  // namespace

void release_book::owe(const std::string& lock) {
  std::lock_guard g(m_);
  ++owed_[lock];
  ++gen_;
}

void release_book::settle_locked(const std::string& lock) {
  auto it = owed_.find(lock);
  if (it != owed_.end() && --it->second <= 0) owed_.erase(it);
  ++gen_;
  cv_.notify_all();
}

void release_book::answered(owed_release o, bool error_reply) {
  std::lock_guard g(m_);
  if (error_reply && clock::now() < o.until) {
    o.next = clock::now();
    retry_.push_back(std::move(o));
    return;
  }
  settle_locked(o.lock);
}

void release_book::unanswered(std::vector<owed_release> os) noexcept {
  try {
    std::lock_guard g(m_);
    for (auto& o : os) {
      o.next = clock::now();
      retry_.push_back(std::move(o));
    }
    ++gen_;
  } catch (...) {
    // Out of memory: those leases run out by themselves.
  }
}

bool release_book::owes(std::string_view lock) const {
  std::lock_guard g(m_);
  return owed_.find(lock) != owed_.end();
}

std::uint64_t release_book::generation() const {
  std::lock_guard g(m_);
  return gen_;
}

bool release_book::wait_change(std::uint64_t gen, steady_time until) {
  std::unique_lock lk(m_);
  return cv_.wait_until(lk, until, [&] { return gen_ != gen; });
}

void release_book::changed() {
  {
    std::lock_guard g(m_);
    ++gen_;
  }
  cv_.notify_all();
}

std::vector<owed_release> release_book::due(steady_time now) {
  std::vector<owed_release> out;
  std::lock_guard g(m_);
  auto it = std::partition(retry_.begin(), retry_.end(),
                           [&](const owed_release& o) { return o.next > now; });
  std::move(it, retry_.end(), std::back_inserter(out));
  retry_.erase(it, retry_.end());
  return out;
}

void release_book::retried(owed_release o, bool ok) {
  std::lock_guard g(m_);
  const auto now = clock::now();
  if (!ok && now < o.until) {
    o.next = now + retry_pause(o.tries++);
    retry_.push_back(std::move(o));
    return;
  }
  settle_locked(o.lock);
}

bool release_book::clear() const {
  std::lock_guard g(m_);
  return owed_.empty() && retry_.empty();
}

// ---- own holds ----

void own_holds::add(const std::string& owner) {
  std::lock_guard g(m_);
  owners_.insert(owner);
}

bool own_holds::take(const std::string& owner) {
  std::lock_guard g(m_);
  return owners_.erase(owner) > 0;
}

// ---- the flush ----

release_flusher::~release_flusher() {
  {
    std::lock_guard g(m_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void release_flusher::poke() {
  std::lock_guard g(m_);
  work_ = true;
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  // Woken only from its sleep: a thread already between passes comes round by itself (waking
  // it at every release would cost a context switch per lock/unlock pair).
  if (asleep_) cv_.notify_all();
}

void release_flusher::run() {
  std::unique_lock lk(m_);
  for (;;) {
    asleep_ = true;
    cv_.wait(lk, [&] { return stop_ || work_; });
    asleep_ = false;
    if (stop_) return;
    // A pass every flush_after while anything is owed (a reply still in flight, a retry).
    cv_.wait_for(lk, flush_after, [&] { return stop_; });
    if (stop_) return;
    work_ = false;
    lk.unlock();
    bool more = true;
    try {
      more = step_(clock::now());
    } catch (...) {
    }
    lk.lock();
    if (more) work_ = true;
  }
}

}  // namespace sqlock::redis::detail
