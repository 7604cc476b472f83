// Advisory holds recorded in the background, in batches.
#include "hold_recorder.hpp"

#include <algorithm>
#include <vector>

#include "sqlock/random.hpp"

namespace sqlock::sql {

namespace {

// Pauses after a failed write (the server down, the pool busy): jittered, capped doubling.
constexpr milliseconds retry_initial{100};
constexpr milliseconds retry_cap{5000};

}  // namespace

hold_recorder::hold_recorder(writer write, milliseconds delay, milliseconds timeout, upkeep keep)
    : write_(std::move(write)), delay_(delay), timeout_(timeout), keep_(keep), thread_([this] {
        run();
      }) {}

hold_recorder::hold_recorder(writer write, milliseconds delay, milliseconds timeout)
    : hold_recorder(std::move(write), delay, timeout, upkeep{}) {}

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
  entry e{std::move(h.holder),
          h.fence,
          h.pid,
          h.since,
          std::chrono::steady_clock::now() + delay_,
          h.kind,
          h.permits};
  const auto due = e.due;
  std::lock_guard lk(m_);
  auto it = holds_.find(k);
  if (it == holds_.end()) {
    it = holds_.emplace(std::move(k), std::move(e)).first;
    ++unsent_;
  } else {  // an entry left by a hold whose end was not told (replaced: the new one counts)
    if (it->second.sent) ++unsent_;
    unschedule(*it);
    it->second = std::move(e);
  }
  schedule(*it);
  // The thread waits until the earliest due time it knew of: wake it when this one is earlier.
  if (due < wakes_at_) cv_.notify_all();
}

bool hold_recorder::released(const std::string& name, const std::string& owner) {
  std::lock_guard lk(m_);
  auto it = holds_.find(key{name, owner});
  if (it == holds_.end()) return false;
  const bool sent = it->second.sent;
  if (!sent) --unsent_;
  if (keep_.ends_written && (sent || it->second.stored)) {
    ended_.push_back(it->first);
    cv_.notify_all();
  }
  unschedule(*it);
  holds_.erase(it);
  return sent;
}

void hold_recorder::flush(steady_time deadline) {
  std::unique_lock lk(m_);
  if (unsent_ == 0 && ended_.empty() && !writing_) return;
  const auto mine = ++flushes_;
  cv_.notify_all();
  cv_.wait_until(lk, deadline, [&] { return flushed_ >= mine || stop_; });
}

bool hold_recorder::scheduled(const entry& e) const {
  return !e.sent || keep_.rewrite_every > milliseconds(0);
}

void hold_recorder::schedule(const std::pair<const key, entry>& h) {
  if (scheduled(h.second)) due_.emplace(h.second.due, h.first);
}

void hold_recorder::unschedule(const std::pair<const key, entry>& h) {
  if (scheduled(h.second)) due_.erase({h.second.due, h.first});
}

hold_recorder::batch hold_recorder::take_batch(steady_time now, bool all, std::vector<key>& keys) {
  // The entries due by now come first in due_; with `all`, unsent ones due later too.
  for (const auto& [due, k] : due_) {
    if (due > now && !all) break;
    if (due > now && holds_.at(k).sent) continue;
    keys.push_back(k);
  }
  batch b;
  for (const auto& k : keys) {
    auto& h = *holds_.find(k);
    auto& e = h.second;
    unschedule(h);
    if (!e.sent) --unsent_;
    e.sent = true;
    if (keep_.rewrite_every > milliseconds(0)) e.due = now + keep_.rewrite_every;
    schedule(h);
    b.records.push_back({k.first, k.second, e.holder, e.fence, e.pid,
                         std::chrono::duration_cast<milliseconds>(now - e.since).count(), e.kind,
                         e.permits});
  }
  b.ended.swap(ended_);
  return b;
}

steady_time hold_recorder::next_due(steady_time now) const {
  auto due = ended_.empty() ? steady_time::max() : std::max(ends_due_, now);
  if (!due_.empty()) due = std::min(due, due_.begin()->first);
  return due;
}

void hold_recorder::run() {
  std::unique_lock lk(m_);
  unsigned failures = 0;
  while (!stop_) {
    const auto now = std::chrono::steady_clock::now();
    if (unsent_ == 0 && ended_.empty()) {
      flushed_ = flushes_;  // nothing is owed to a flush
      cv_.notify_all();
    }
    const bool all = flushed_ < flushes_;
    const auto due = all ? now : next_due(now);
    if (now < due) {
      wakes_at_ = due;
      if (due == steady_time::max())
        cv_.wait(lk);
      else
        cv_.wait_until(lk, due);
      wakes_at_ = steady_time{};
      continue;
    }
    const auto served = flushes_;
    std::vector<key> keys;
    auto b = take_batch(now, all, keys);
    writing_ = true;
    lk.unlock();
    bool ok = true;
    try {
      write_(b, now + timeout_);
    } catch (...) {
      ok = false;  // a lost record only delays what list() shows; retried below
    }
    lk.lock();
    writing_ = false;
    if (ok) {
      failures = 0;
      for (const auto& k : keys)
        if (auto it = holds_.find(k); it != holds_.end()) it->second.stored = true;
    } else {
      const auto retry =
          std::chrono::steady_clock::now() + backoff_delay(failures++, retry_initial, retry_cap);
      for (const auto& k : keys) {
        auto it = holds_.find(k);
        if (it == holds_.end() || !it->second.sent) continue;
        unschedule(*it);
        it->second.sent = false;
        it->second.due = retry;
        schedule(*it);
        ++unsent_;
      }
      ended_.insert(ended_.end(), b.ended.begin(), b.ended.end());
      ends_due_ = retry;
    }
    flushed_ = std::max(flushed_, served);
    cv_.notify_all();
  }
}

}  // namespace sqlock::sql
