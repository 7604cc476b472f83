// The connection counter (connection_counter.hpp): counts of one backend object's connections and
// the reservation of a place within the connection budget before a connect.
#include "connection_counter.hpp"

namespace sqlock::sql {

void connection_counter::count_open() noexcept {
  auto now = open_.fetch_add(1, std::memory_order_relaxed) + 1;
  auto peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

void connection_counter::opened() noexcept {
  opened_.fetch_add(1, std::memory_order_relaxed);
  count_open();
}

void connection_counter::connected() noexcept {
  opened_.fetch_add(1, std::memory_order_relaxed);
}

bool connection_counter::reserve(steady_time deadline) {
  std::unique_lock lk(m_);
  if (limit_ != 0 && !cv_.wait_until(lk, deadline, [this] { return open_ < limit_; })) return false;
  count_open();
  return true;
}

void connection_counter::closed() noexcept {
  {
    std::lock_guard g(m_);
    open_.fetch_sub(1, std::memory_order_relaxed);
  }
  cv_.notify_all();
}

connection_stats connection_counter::get() const noexcept {
  return {opened_.load(std::memory_order_relaxed), open_.load(std::memory_order_relaxed),
          peak_.load(std::memory_order_relaxed)};
}

}  // namespace sqlock::sql
