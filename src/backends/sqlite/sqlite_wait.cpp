// The SQLite waiters' inotify watches on the WAL file (sqlite_wait.hpp): a blocked waiter's own,
// and the client's one for its asynchronous waiters.
#include "sqlite_wait.hpp"

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "sqlock/backend/waiting.hpp"

namespace sqlock::sqlite::detail {

wal_watch::~wal_watch() {
  if (fd_ >= 0) ::close(fd_);
}

void wal_watch::wait(steady_time until, const std::stop_token& stop) {
  if (!opened_) {  // first busy attempt: watch from now on, then let the core try again
    opened_ = true;
    fd_ = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    arm();
    return;
  }
  auto now = std::chrono::steady_clock::now();
  auto limit = std::min<steady_time>(until, now + (armed_ ? recheck_armed : recheck_unarmed));
  if (!armed_ || fd_ < 0) {
    sleep_until(limit, stop);
    arm();
    return;
  }
  auto ms = std::chrono::ceil<milliseconds>(limit - now).count();
  stop_fd stopped(stop);  // a stop wakes the poll
  pollfd pfd[2] = {{fd_, POLLIN, 0}, {stopped.fd(), POLLIN, 0}};
  if (ms > 0) ::poll(pfd, 2, static_cast<int>(ms));
  char buf[4096];
  while (::read(fd_, buf, sizeof buf) > 0) {
  }
}

void wal_watch::arm() {
  if (fd_ >= 0 && !armed_) armed_ = ::inotify_add_watch(fd_, path_.c_str(), IN_MODIFY) >= 0;
}

std::optional<steady_time> wal_watch::arm(steady_time until, std::function<void()> wake) {
  const auto now = std::chrono::steady_clock::now();
  switch (shared_.arm(since_, this, std::move(wake))) {
    case wal_notifier::armed::heard:
      return now;
    case wal_notifier::armed::unwatched:
      return std::min<steady_time>(until, now + recheck_unarmed);
    case wal_notifier::armed::waiting:
      break;
  }
  return until;
}

wal_notifier::~wal_notifier() {
  gate_->close();  // a read under way ends first; none starts after
  {
    std::lock_guard g(m_);
    readable_.reset();
  }
  if (fd_ >= 0) ::close(fd_);
}

bool wal_notifier::ensure_watch() {
  if (fd_ < 0) {
    fd_ = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (fd_ < 0) return false;
    watch_instance();
  }
  if (wd_ < 0) wd_ = ::inotify_add_watch(fd_, path_.c_str(), IN_MODIFY);
  return wd_ >= 0;
}

wal_notifier::armed wal_notifier::arm(std::uint64_t since, const void* key,
                                      std::function<void()> wake) {
  std::lock_guard g(m_);
  if (wd_ < 0) {
    // Not watched: the last attempt may have missed a change, so the next one comes at once
    // once the watch stands, or after a pause while the file cannot be watched.
    return ensure_watch() ? armed::heard : armed::unwatched;
  }
  if (seq_.load(std::memory_order_relaxed) != since) return armed::heard;
  armed_[key] = std::move(wake);
  return armed::waiting;
}

void wal_notifier::disarm(const void* key) noexcept {
  std::function<void()> dropped;  // destroyed after the lock is let go
  std::lock_guard g(m_);
  auto it = armed_.find(key);
  if (it == armed_.end()) return;
  dropped = std::move(it->second);
  armed_.erase(it);
}

void wal_notifier::watch_instance() {
  readable_ = watch_descriptor(
      fd_, POLLIN, [gate = gate_, this](short) { gate->run([this] { read_changes(); }); });
}

void wal_notifier::read_changes() {
  alignas(inotify_event) char buf[4096];
  bool dropped = false;  // the file went (deleted or replaced): the watch with it
  ssize_t n;
  while ((n = ::read(fd_, buf, sizeof buf)) > 0) {
    for (ssize_t at = 0; at < n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + at);
      if (ev->mask & IN_IGNORED) dropped = true;
      at += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
    }
  }
  std::map<const void*, std::function<void()>> woken;
  {
    std::lock_guard g(m_);
    if (dropped) wd_ = -1;  // the next arm() sets it again
    seq_.fetch_add(1, std::memory_order_release);
    woken.swap(armed_);
    watch_instance();  // for the next event
  }
  for (auto& [key, wake] : woken) wake();  // each request's next step (cheap, never blocks)
}

}  // namespace sqlock::sqlite::detail
