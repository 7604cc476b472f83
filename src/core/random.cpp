#include "sqlock/random.hpp"

#include <pwd.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <vector>

#include "sqlock/errors.hpp"

namespace sqlock {

namespace {

void fill_random(void* buf, std::size_t len) {
  auto* p = static_cast<unsigned char*>(buf);
  while (len > 0) {
    ssize_t n = ::getrandom(p, len, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw error(std::string("getrandom failed: ") + std::strerror(errno));
    }
    p += n;
    len -= static_cast<std::size_t>(n);
  }
}

std::mt19937_64& thread_rng() {
  thread_local std::mt19937_64 rng = [] {
    std::uint64_t seed = 0;
    fill_random(&seed, sizeof seed);
    return std::mt19937_64(seed);
  }();
  return rng;
}

}  // namespace

std::string random_token() {
  std::array<unsigned char, 16> bytes{};
  fill_random(bytes.data(), bytes.size());
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(32);
  for (unsigned char b : bytes) {
    out.push_back(hex[b >> 4]);
    out.push_back(hex[b & 15]);
  }
  return out;
}

std::uint64_t jitter(std::uint64_t bound) {
  if (bound == 0) return 0;
  return std::uniform_int_distribution<std::uint64_t>(0, bound - 1)(thread_rng());
}

std::chrono::milliseconds backoff_delay(unsigned attempt, std::chrono::milliseconds initial,
                                        std::chrono::milliseconds cap) {
  std::int64_t ceiling = std::max<std::int64_t>(1, initial.count());
  for (unsigned i = 0; i < attempt && ceiling < cap.count(); ++i) ceiling *= 2;
  ceiling = std::max<std::int64_t>(1, std::min<std::int64_t>(ceiling, cap.count()));
  auto d = static_cast<std::int64_t>(jitter(static_cast<std::uint64_t>(ceiling) + 1));
  return std::chrono::milliseconds(std::max<std::int64_t>(1, d));
}

std::string default_holder() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "unknown");
  std::string program;
  std::ifstream comm("/proc/self/comm");
  std::getline(comm, program);
  return std::string(host) + ":" + std::to_string(::getpid()) + ":" + program;
}

std::string default_actor() {
  std::string user;
  if (const char* u = std::getenv("USER"); u && *u) {
    user = u;
  } else {
    std::vector<char> buf(16384);
    struct passwd pw {};
    struct passwd* found = nullptr;
    if (::getpwuid_r(::geteuid(), &pw, buf.data(), buf.size(), &found) == 0 && found)
      user = found->pw_name;
    else
      user = "uid" + std::to_string(::geteuid());
  }
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "unknown");
  std::string out = user + "@" + host;
  std::erase_if(out, [](char ch) { return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f; });
  if (out.size() > 200) {  // at a UTF-8 character's start
    std::size_t n = 200;
    while (n > 0 && (static_cast<unsigned char>(out[n]) & 0xC0) == 0x80) --n;
    out.resize(n);
  }
  return out;
}

}  // namespace sqlock
