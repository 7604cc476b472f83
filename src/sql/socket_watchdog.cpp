// The watchdog thread: sleeps until the earliest armed deadline, shuts that call's socket down.
#include "socket_watchdog.hpp"

#include <sys/socket.h>

#include "core/process_instance.hpp"

namespace sqlock::sql {

socket_watchdog& socket_watchdog::instance() {
  return process_instance<socket_watchdog>();
}

socket_watchdog::~socket_watchdog() {
  {
    std::lock_guard g(m_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::uint64_t socket_watchdog::arm(int fd, time_point deadline) {
  std::lock_guard g(m_);
  if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  auto id = next_++;
  armed_.emplace(id, entry{fd, deadline});
  if (deadline < wake_at_) {  // only an earlier deadline needs the thread to wake sooner
    wake_at_ = deadline;
    cv_.notify_all();
  }
  return id;
}

bool socket_watchdog::disarm(std::uint64_t id) {
  std::lock_guard g(m_);
  auto it = armed_.find(id);
  if (it == armed_.end()) return false;
  bool fired = it->second.fired;
  armed_.erase(it);
  return fired;
}

void socket_watchdog::loop() {
  std::unique_lock g(m_);
  while (!stop_) {
    auto next = time_point::max();
    auto now = std::chrono::steady_clock::now();
    for (auto& [id, e] : armed_) {
      if (e.fired) continue;
      if (e.deadline <= now) {
        // Under the mutex: disarm() cannot return (and the owner cannot close the descriptor)
        // while the socket is being shut down.
        ::shutdown(e.fd, SHUT_RDWR);
        e.fired = true;
      } else {
        next = std::min(next, e.deadline);
      }
    }
    wake_at_ = next;  // a disarmed entry's deadline only gives one spurious wake
    if (next == time_point::max())
      cv_.wait(g);
    else
      cv_.wait_until(g, next);
  }
}

watched_call::watched_call(int fd, socket_watchdog::time_point deadline) {
  if (fd >= 0 && deadline != socket_watchdog::time_point::max())
    id_ = socket_watchdog::instance().arm(fd, deadline);
}

watched_call::~watched_call() {
  finish();
}

bool watched_call::finish() {
  if (!id_) return false;
  auto id = id_;
  id_ = 0;
  return socket_watchdog::instance().disarm(id);
}

}  // namespace sqlock::sql
