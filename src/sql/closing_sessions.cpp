// The thread that waits for the server to end the sessions of closed connections
// (closing_sessions.hpp).
#include "sql/closing_sessions.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "core/process_instance.hpp"

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

// For a socket shut down both ways here: true once its TCP connection has left FIN-WAIT (the
// server closed its end, or this side reset what the server sent after the shutdown); false
// while it waits there, and for a socket that is not TCP.
bool tcp_ended(int fd) {
  tcp_info info{};
  socklen_t len = sizeof info;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return false;
  return info.tcpi_state != TCP_FIN_WAIT1 && info.tcpi_state != TCP_FIN_WAIT2 &&
         info.tcpi_state != TCP_ESTABLISHED;
}

// How often a socket watched by its TCP state is looked at (it cannot be polled: a socket shut
// down both ways is always readable).
constexpr std::chrono::milliseconds tcp_state_tick{10};

}  // namespace

closing_sessions& closing_sessions::instance() {
  return process_instance<closing_sessions>();
}

void closing_sessions::add(int fd, std::function<void()> ended_fn, bool shut_down) {
  if (!shut_down) ::shutdown(fd, SHUT_WR);  // the server reads the end of the connection
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
    pending_.push_back(
        {fd, std::chrono::steady_clock::now() + closing_bound, std::move(ended_fn), shut_down});
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
    const auto start = std::chrono::steady_clock::now();
    for (const auto& e : watched) {
      // A shut-down socket is looked at every tick instead (polling it would spin).
      fds.push_back({e.shut_down ? -1 : e.fd, POLLIN | POLLRDHUP, 0});
      first = std::min(first, e.shut_down ? start + tcp_state_tick : e.until);
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
      const bool over = e.shut_down ? tcp_ended(e.fd) : fds[i + 1].revents != 0 && ended(e.fd);
      if (over || now >= e.until) {
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
