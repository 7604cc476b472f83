#include "history.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace sqlock::chaos {

history::history(const std::string& path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw std::runtime_error("history: cannot open " + path + ": " + std::strerror(errno));
}

history::~history() {
  ::close(fd_);
}

void history::line(const std::string& text) {
  std::string l = text + "\n";
  const char* p = l.data();
  std::size_t left = l.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(std::string("history: write: ") + std::strerror(errno));
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

}  // namespace sqlock::chaos
