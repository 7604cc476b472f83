// The thread that waits for the server to end the sessions of closed connections
// (closing_sessions.hpp).
#include "sql/closing_sessions.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "sql/process_instance.hpp"

namespace sqlock::sql {

namespace {

// True when the server has closed its end of `fd` (or the socket failed): what it still sent
// (the answer of a statement it finished) is read and dropped.
bool ended(int fd) {
  char buf[4096];
  for (;;) {
    const auto n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
  }
}

}  // namespace

closing_sessions& closing_sessions::instance() {
  return process_instance<closing_sessions>();
}

void closing_sessions::add(int fd, std::function<void()> ended_fn) {
  ::shutdown(fd, SHUT_WR);  // the server reads the end of the connection
  {
    std::lock_guard g(m_);
    if (!thread_.joinable()) {
      if (::pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
        ::close(fd);  // no thread to wait with: count it closed now
        ended_fn();
        return;
      }
      thread_ = std::thread([this] { loop(); });
    }
    pending_.push_back({fd, std::chrono::steady_clock::now() + closing_bound, std::move(ended_fn)});
  }
  wake();
}

void closing_sessions::wake() {
  char b = 1;
  [[maybe_unused]] auto n = ::write(pipe_[1], &b, 1);  // a full pipe is awake already
}

void closing_sessions::loop() {
  std::vector<entry> watched;
  for (;;) {  // until the process ends
    {
      std::lock_guard g(m_);
      std::move(pending_.begin(), pending_.end(), std::back_inserter(watched));
      pending_.clear();
    }
    std::vector<pollfd> fds{{pipe_[0], POLLIN, 0}};
    auto first = std::chrono::steady_clock::time_point::max();
    for (const auto& e : watched) {
      fds.push_back({e.fd, POLLIN | POLLRDHUP, 0});
      first = std::min(first, e.until);
    }
    int timeout = -1;
    if (!watched.empty()) {
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(first - std::chrono::steady_clock::now());
      timeout = static_cast<int>(std::max<std::chrono::milliseconds::rep>(left.count(), 0));
    }
    ::poll(fds.data(), fds.size(), timeout);
    char buf[64];
    while (::read(pipe_[0], buf, sizeof buf) > 0) {
    }
    const auto now = std::chrono::steady_clock::now();
    std::vector<entry> still;
    for (std::size_t i = 0; i < watched.size(); ++i) {
      auto& e = watched[i];
      if ((fds[i + 1].revents != 0 && ended(e.fd)) || now >= e.until) {
        ::close(e.fd);
        e.ended();
      } else {
        still.push_back(std::move(e));
      }
    }
    watched.swap(still);
  }
}

}  // namespace sqlock::sql
