// The session pool of the MySQL advisory backend (advisory_sessions.hpp).
#include "advisory_sessions.hpp"

#include <algorithm>

#include "sql/connection_budget.hpp"

namespace sqlock::mysql::detail {

hold_list session::close(const std::string& keep) {
  hold_list lost;
  for (auto& [name, h] : holds)
    if (name != keep) lost.emplace_back(name, h.owner);
  holds.clear();
  dead = true;
  fd = -1;
  conn.reset();
  return lost;
}

session_pool::session_pool(options o, std::size_t calls, std::size_t waiters,
                           std::shared_ptr<sql::connection_counter> counter)
    : opts_(std::move(o)),
      calls_(std::max<std::size_t>(calls, 1)),
      waiters_(waiters),
      counter_(std::move(counter)) {}

void session_pool::prune() {
  std::erase_if(sessions_, [](const std::shared_ptr<session>& s) { return s->dead.load(); });
}

taken_session session_pool::open_new() {
  auto s = std::make_shared<session>();
  s->conn =
      open_connection(opts_, counter_);  // connects on its first call, within that call's deadline
  std::unique_lock g(s->m);
  sessions_.push_back(s);
  return {std::move(s), std::move(g)};
}

taken_session session_pool::take(steady_time deadline) {
  for (;;) {
    std::shared_ptr<session> next;
    {
      std::lock_guard g(m_);
      prune();
      const std::size_t n = sessions_.size();
      for (std::size_t i = 0; i < n; ++i) {
        auto& s = sessions_[(next_ + i) % n];
        if (s->waiting) continue;
        std::unique_lock l(s->m, std::try_to_lock);
        if (l.owns_lock() && !s->dead) return {s, std::move(l)};
      }
      if (n < calls_) return open_new();
      // Every session is in a call: wait for the next one in turn that is not waiting.
      for (std::size_t i = 0; i < n && !next; ++i) {
        auto& s = sessions_[(next_ + i) % n];
        if (!s->waiting) next = s;
      }
      next_ = n == 0 ? 0 : (next_ + 1) % n;
      // All waiting: fewer than `calls + waiters` exist (at most `waiters` wait at once).
      if (!next) return open_new();
    }
    std::unique_lock l(next->m, std::defer_lock);
    if (!l.try_lock_until(sql::connection_wait_deadline(deadline)))
      throw sql::pool_busy("no MySQL advisory session came free by the call's deadline");
    if (!next->dead && !next->waiting) return {next, std::move(l)};
  }
}

taken_session session_pool::take_for_wait() {
  std::lock_guard g(m_);
  prune();
  for (auto& s : sessions_) {
    if (s->waiting) continue;
    std::unique_lock l(s->m, std::try_to_lock);
    if (l.owns_lock() && !s->dead && s->holds.empty()) {
      s->waiting = true;
      return {s, std::move(l)};
    }
  }
  if (sessions_.size() >= calls_ + waiters_) return {};
  auto t = open_new();
  t.s->waiting = true;
  return t;
}

bool session_pool::reserve_wait() {
  std::lock_guard g(m_);
  if (wait_slots_ >= waiters_) return false;
  ++wait_slots_;
  return true;
}

void session_pool::end_wait() {
  std::lock_guard g(m_);
  if (wait_slots_ > 0) --wait_slots_;
}

std::vector<std::shared_ptr<session>> session_pool::all() {
  std::lock_guard g(m_);
  prune();
  return sessions_;
}

}  // namespace sqlock::mysql::detail
