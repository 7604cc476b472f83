// Writer marks removed in batches (mark_clearer.hpp).
#include "mark_clearer.hpp"

namespace sqlock::sql {

mark_clearer::mark_clearer(clear_fn clear, milliseconds bound)
    : clear_(std::move(clear)), bound_(bound) {}

mark_clearer::~mark_clearer() {
  std::vector<pending> left;
  {
    std::unique_lock g(state_->m);
    state_->closed = true;
    if (state_->sending && state_->sender == std::this_thread::get_id()) {
      state_->orphaned = true;  // a continuation of this thread's batch destroys us: the
      return;                   // sender ends the rest without removing them
    }
    state_->idle.wait(g, [&] { return !state_->sending; });
    left.swap(state_->queue);
  }
  std::vector<mark> marks;
  for (auto& p : left) marks.push_back(std::move(p.m));
  try {
    if (!marks.empty()) clear_(marks, std::chrono::steady_clock::now() + bound_);
  } catch (...) {  // they expire by themselves
  }
  for (auto& p : left) p.then();
}

void mark_clearer::clear_then(std::string name, std::string owner,
                              std::function<void()> then) noexcept {
  auto s = state_;  // the sender's own reference: a continuation may destroy this object
  pending p{{std::move(name), std::move(owner)}, std::move(then)};
  bool queued = false;
  {
    std::lock_guard g(s->m);
    try {
      s->queue.push_back(std::move(p));  // left intact when it throws (moves do not)
      queued = true;
    } catch (...) {  // out of memory: the caller goes on, the mark expires by itself
    }
    if (queued && s->sending) return;  // the running batch's sender sends it next
    if (queued) {
      s->sending = true;
      s->sender = std::this_thread::get_id();
    }
  }
  if (!queued) return p.then();
  send(s);
}

void mark_clearer::send(const std::shared_ptr<state>& s) noexcept {
  for (;;) {
    std::vector<pending> batch;
    {
      std::lock_guard g(s->m);
      batch.swap(s->queue);
    }
    // This object lives: its destructor waits for this sender on another thread, and on this
    // thread it can only run in a continuation, below.
    std::vector<mark> marks;
    for (auto& p : batch) marks.push_back(std::move(p.m));
    try {
      clear_(marks, std::chrono::steady_clock::now() + bound_);
    } catch (...) {  // they expire by themselves
    }
    for (auto& p : batch) p.then();
    std::vector<pending> orphans;
    {
      std::lock_guard g(s->m);
      if (s->orphaned) {
        orphans.swap(s->queue);
      } else if (!s->queue.empty() && !s->closed) {
        continue;
      }
      s->sending = false;
      s->idle.notify_all();
    }
    for (auto& p : orphans) p.then();
    return;
  }
}

}  // namespace sqlock::sql
