// Advisory holds recorded in the background, in batches.
#include "hold_recorder.hpp"

#include <algorithm>
#include <vector>

#include "sqlock/backend/background.hpp"
#include "sqlock/random.hpp"

namespace sqlock::sql {

namespace {

// Pauses after a failed write (the server down, the pool busy): jittered, capped doubling.
constexpr milliseconds retry_initial{100};
constexpr milliseconds retry_cap{5000};
// The least time between the end of a write and the next one, but for a flush's: what comes
// due meanwhile goes in one batch, so that the driver threads the writes run on stay free
// for the acquisitions they drive.
constexpr milliseconds write_gap{10};
// How long the ends of written records wait to be written (upkeep::ends_written): requests
// stopped together (a cancel of thousands) end in one batch after the stop, not in batches
// that share the driver threads with the cancels themselves.
constexpr milliseconds end_delay{100};

}  // namespace

hold_recorder::hold_recorder(writer write, milliseconds delay, milliseconds timeout, upkeep keep)
    : write_(std::move(write)),
      delay_(delay),
      timeout_(timeout),
      keep_(keep),
      gate_(std::make_shared<task_gate>()) {}

hold_recorder::hold_recorder(writer write, milliseconds delay, milliseconds timeout)
    : hold_recorder(std::move(write), delay, timeout, upkeep{}) {}

hold_recorder::~hold_recorder() {
  {
    std::lock_guard lk(m_);
    stop_ = true;
  }
  cv_.notify_all();
  gate_->close();  // later tasks find the gate closed; one writing now ends first
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
  arm(due);
}

bool hold_recorder::released(const std::string& name, const std::string& owner) {
  std::lock_guard lk(m_);
  auto it = holds_.find(key{name, owner});
  if (it == holds_.end()) return false;
  const bool sent = it->second.sent;
  if (!sent) --unsent_;
  if (keep_.ends_written && (sent || it->second.stored)) {
    // The first end queued is written end_delay later, with those that follow it.
    if (ended_.empty())
      ends_due_ = std::max(ends_due_, std::chrono::steady_clock::now() + end_delay);
    ended_.push_back(it->first);
    arm(ends_due_);
  }
  unschedule(*it);
  holds_.erase(it);
  return sent;
}

void hold_recorder::flush(steady_time deadline) {
  std::unique_lock lk(m_);
  if (unsent_ == 0 && ended_.empty() && !writing_) return;
  const auto mine = ++flushes_;
  pump(lk, deadline);  // on this thread, unless a task writes now (it serves the flush next)
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

void hold_recorder::arm(steady_time t) {
  // A write going on is followed by whatever is due by then (pump()).
  if (t >= task_at_ || stop_ || writing_) return;
  task_at_ = t;
  run_in_background(t, [g = gate_, this, t] { g->run([&] { step(t); }); });
}

void hold_recorder::step(steady_time fired) {
  std::unique_lock lk(m_);
  if (fired == task_at_) task_at_ = steady_time::max();
  pump(lk, steady_time::max());
}

void hold_recorder::pump(std::unique_lock<std::mutex>& lk, steady_time write_by) {
  while (!stop_ && !writing_) {
    const auto now = std::chrono::steady_clock::now();
    if (unsent_ == 0 && ended_.empty()) {
      flushed_ = flushes_;  // nothing is owed to a flush
      cv_.notify_all();
    }
    const bool all = flushed_ < flushes_;
    const auto due = all ? now : std::max(next_due(now), next_write_);
    if (now < due) {
      if (due != steady_time::max()) arm(due);
      return;
    }
    const auto served = flushes_;
    std::vector<key> keys;
    auto b = take_batch(now, all, keys);
    writing_ = true;
    lk.unlock();
    bool ok = true;
    try {
      write_(b, std::min(write_by, now + timeout_));
    } catch (...) {
      ok = false;  // a lost record only delays what list() shows; retried below
    }
    lk.lock();
    writing_ = false;
    next_write_ = std::chrono::steady_clock::now() + write_gap;
    if (ok) {
      failures_ = 0;
      for (const auto& k : keys)
        if (auto it = holds_.find(k); it != holds_.end()) it->second.stored = true;
    } else {
      const auto retry =
          std::chrono::steady_clock::now() + backoff_delay(failures_++, retry_initial, retry_cap);
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
