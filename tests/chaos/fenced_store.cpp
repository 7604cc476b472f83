#include "fenced_store.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace sqlock::chaos {

namespace {
[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error("fenced store: " + what + ": " + std::strerror(errno));
}

// Closes a descriptor on scope exit (the flock goes with it).
struct fd_guard {
  int fd;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
};
}  // namespace

std::int64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

fenced_store::fenced_store(std::string dir) : dir_(std::move(dir)) {
  if (::mkdir(dir_.c_str(), 0755) != 0 && errno != EEXIST) fail("mkdir " + dir_);
}

std::string fenced_store::file_key(const std::string& name) {
  static const char* digits = "0123456789abcdef";
  std::string k;
  for (unsigned char c : name) {
    k += digits[c >> 4];
    k += digits[c & 15];
  }
  return k;
}

namespace {
// The highest fence in an open state file (the caller holds its flock).
std::uint64_t read_highest(int fd, const std::string& path) {
  char buf[32] = {};
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n < 0) fail("read state");
  std::uint64_t highest = 0;
  if (n > 0 && std::sscanf(buf, "%" SCNu64, &highest) != 1)
    throw std::runtime_error("fenced store: corrupt state file " + path);
  return highest;
}

// Opens `path` and takes its flock (`how`: LOCK_SH or LOCK_EX).
int open_locked(const std::string& path, int how) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) fail("open " + path);
  while (::flock(fd, how) != 0)
    if (errno != EINTR) {
      const int e = errno;
      ::close(fd);
      errno = e;
      fail("flock");
    }
  return fd;
}
}  // namespace

std::uint64_t fenced_store::read(const std::string& name) {
  const std::string path = dir_ + "/" + file_key(name) + ".state";
  fd_guard state{open_locked(path, LOCK_SH)};
  return read_highest(state.fd, path);
}

write_result fenced_store::write(const std::string& name, std::uint64_t fence,
                                 const std::string& writer) {
  const std::string base = dir_ + "/" + file_key(name);
  fd_guard state{open_locked(base + ".state", LOCK_EX)};
  const std::uint64_t highest = read_highest(state.fd, base + ".state");
  write_result r;
  r.highest = highest;
  if (fence < highest) return r;
  r.accepted = true;
  r.accepted_ns = monotonic_ns();
  // State first: a writer killed between the two leaves a write the log lacks (and so does its
  // history), never a logged fence the state has not raised to.
  char buf[32];
  int len = std::snprintf(buf, sizeof buf, "%20" PRIu64 "\n", fence);
  if (::pwrite(state.fd, buf, static_cast<std::size_t>(len), 0) != len) fail("write state");
  fd_guard log{::open((base + ".log").c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644)};
  if (log.fd < 0) fail("open log");
  char line[128];
  len = std::snprintf(line, sizeof line, "%" PRId64 " %" PRIu64 " %s\n", r.accepted_ns, fence,
                      writer.c_str());
  if (::write(log.fd, line, static_cast<std::size_t>(len)) != len) fail("append log");
  return r;
}

}  // namespace sqlock::chaos
