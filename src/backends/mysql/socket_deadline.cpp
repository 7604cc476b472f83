// The socket finder of socket_deadline.hpp.
#include "socket_deadline.hpp"

#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

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

}  // namespace sqlock::mysql::detail
