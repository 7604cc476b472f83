// The socket finder and the watchdog thread of socket_deadline.hpp.
#include "socket_deadline.hpp"

#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

namespace sqlock::mysql::detail {
namespace {

using time_point = std::chrono::steady_clock::time_point;

// The socket inode behind descriptor `fd`, or 0 when it is not a socket.
unsigned long inode_of(int fd) {
  char link[64];
  char target[128];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  auto n = ::readlink(link, target, sizeof target - 1);
  if (n <= 0) return 0;
  target[n] = '\0';
  unsigned long ino = 0;
  return std::sscanf(target, "socket:[%lu]", &ino) == 1 ? ino : 0;
}

template <class Fn>
void each_fd(Fn fn) {
  DIR* d = ::opendir("/proc/self/fd");
  if (!d) return;
  while (auto* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    int fd = std::atoi(e->d_name);
    if (fd != ::dirfd(d)) fn(fd);
  }
  ::closedir(d);
}

bool peer_matches(int fd, int port, const std::string& unix_path) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return false;
  if (!unix_path.empty()) {
    if (a.ss_family != AF_UNIX) return false;
    const auto* un = reinterpret_cast<const sockaddr_un*>(&a);
    return unix_path == un->sun_path;
  }
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&a)->sin_port) == port;
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&a)->sin6_port) == port;
  return false;
}

// One thread serving every armed call of the process.
class watchdog {
 public:
  static watchdog& instance() {
    static watchdog w;
    return w;
  }
  ~watchdog() {
    {
      std::lock_guard g(m_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  std::uint64_t arm(int fd, time_point deadline) {
    std::lock_guard g(m_);
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    auto id = next_++;
    armed_.emplace(id, entry{fd, deadline, false});
    if (deadline < wake_at_) {  // only an earlier deadline needs the thread to wake sooner
      wake_at_ = deadline;
      cv_.notify_all();
    }
    return id;
  }
  bool disarm(std::uint64_t id) {
    std::lock_guard g(m_);
    auto it = armed_.find(id);
    if (it == armed_.end()) return false;
    bool fired = it->second.fired;
    armed_.erase(it);
    return fired;
  }

 private:
  struct entry {
    int fd;
    time_point deadline;
    bool fired;
  };
  void loop() {
    std::unique_lock g(m_);
    while (!stop_) {
      auto next = time_point::max();
      auto now = std::chrono::steady_clock::now();
      for (auto& [id, e] : armed_) {
        if (e.fired) continue;
        if (e.deadline <= now) {
          // Under the mutex: disarm() cannot return (nor the descriptor be closed) meanwhile.
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
  std::mutex m_;
  std::condition_variable cv_;
  std::map<std::uint64_t, entry> armed_;
  std::uint64_t next_ = 1;
  time_point wake_at_ = time_point::min();  // when the thread wakes next (min: not yet waiting)
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace

std::set<unsigned long> socket_inodes() {
  std::set<unsigned long> out;
  each_fd([&](int fd) {
    if (auto ino = inode_of(fd)) out.insert(ino);
  });
  return out;
}

int new_socket(const std::set<unsigned long>& before, int port, const std::string& unix_path) {
  int found = -1;
  int count = 0;
  each_fd([&](int fd) {
    auto ino = inode_of(fd);
    if (ino == 0 || before.count(ino) || !peer_matches(fd, port, unix_path)) return;
    found = fd;
    ++count;
  });
  return count == 1 ? found : -1;
}

watched_call::watched_call(int fd, time_point deadline) {
  if (fd >= 0 && deadline != time_point::max()) id_ = watchdog::instance().arm(fd, deadline);
}

watched_call::~watched_call() {
  finish();
}

bool watched_call::finish() {
  if (!id_) return false;
  auto id = id_;
  id_ = 0;
  return watchdog::instance().disarm(id);
}

}  // namespace sqlock::mysql::detail
