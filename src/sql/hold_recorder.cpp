// Advisory holds recorded in the background, in batches.
#include "hold_recorder.hpp"

#include <vector>

#include "sqlock/random.hpp"

namespace sqlock::sql {

namespace {

// Pauses after a failed write (the server down, the pool busy): jittered, capped doubling.
constexpr milliseconds retry_initial{100};
constexpr milliseconds retry_cap{5000};

}  // namespace

hold_recorder::hold_recorder(writer write, milliseconds delay, milliseconds timeout)
    : write_(std::move(write)), delay_(delay), timeout_(timeout), thread_([this] { run(); }) {}

hold_recorder::~hold_recorder() {
  {
    std::lock_guard lk(m_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void hold_recorder::held(hold h) {
  key k{std::move(h.name), std::move(h.owner)};
  entry e{std::move(h.holder), h.fence, h.pid, h.since, std::chrono::steady_clock::now() + delay_};
  std::lock_guard lk(m_);
  auto it = holds_.find(k);
  if (it == holds_.end()) {
    holds_.emplace(std::move(k), std::move(e));
    ++unsent_;
  } else {  // an entry left by a hold whose end was not told (replaced: the new one counts)
    if (it->second.sent) ++unsent_;
    it->second = std::move(e);
  }
  // The thread waits without a time limit only when nothing was waiting: wake it then; it
  // otherwise wakes by itself at the earliest due time and finds this one.
  if (idle_) cv_.notify_all();
}

bool hold_recorder::released(const std::string& name, const std::string& owner) {
  std::lock_guard lk(m_);
  auto it = holds_.find(key{name, owner});
  if (it == holds_.end()) return false;
  const bool sent = it->second.sent;
  if (!sent) --unsent_;
  holds_.erase(it);
  return sent;
}

void hold_recorder::flush(steady_time deadline) {
  std::unique_lock lk(m_);
  if (unsent_ == 0 && !writing_) return;
  const auto mine = ++flushes_;
  cv_.notify_all();
  cv_.wait_until(lk, deadline, [&] { return flushed_ >= mine || stop_; });
}

std::vector<hold_recorder::record> hold_recorder::take_batch(steady_time now, bool all,
                                                             std::vector<key>& keys) {
  std::vector<record> batch;
  for (auto& [k, e] : holds_) {
    if (e.sent || (!all && e.due > now)) continue;
    e.sent = true;
    --unsent_;
    keys.push_back(k);
    batch.push_back({k.first, k.second, e.holder, e.fence, e.pid,
                     std::chrono::duration_cast<milliseconds>(now - e.since).count()});
  }
  return batch;
}

void hold_recorder::run() {
  std::unique_lock lk(m_);
  unsigned failures = 0;
  while (!stop_) {
    if (unsent_ == 0) {
      flushed_ = flushes_;
      cv_.notify_all();
      idle_ = true;
      cv_.wait(lk);
      idle_ = false;
      continue;
    }
    const auto now = std::chrono::steady_clock::now();
    const bool all = flushed_ < flushes_;
    auto due = steady_time::max();
    for (const auto& [k, e] : holds_)
      if (!e.sent && e.due < due) due = e.due;
    if (!all && now < due) {
      cv_.wait_until(lk, due);
      continue;
    }
    const auto served = flushes_;
    std::vector<key> keys;
    auto batch = take_batch(now, all, keys);
    writing_ = true;
    lk.unlock();
    bool ok = true;
    try {
      write_(batch, now + timeout_);
    } catch (...) {
      ok = false;  // a lost record only delays what list() shows; retried below
    }
    lk.lock();
    writing_ = false;
    if (ok) {
      failures = 0;
    } else {
      const auto retry =
          std::chrono::steady_clock::now() + backoff_delay(failures++, retry_initial, retry_cap);
      for (const auto& k : keys) {
        auto it = holds_.find(k);
        if (it == holds_.end() || !it->second.sent) continue;
        it->second.sent = false;
        it->second.due = retry;
        ++unsent_;
      }
    }
    flushed_ = std::max(flushed_, served);
    cv_.notify_all();
  }
}

}  // namespace sqlock::sql
