// The SQLite waiter's inotify watch on the WAL file (sqlite_wait.hpp).
#include "sqlite_wait.hpp"

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>

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

}  // namespace sqlock::sqlite::detail
