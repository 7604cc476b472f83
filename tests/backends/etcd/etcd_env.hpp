// Helpers of the etcd tests: shell commands (etcdctl acts behind the backend's back), the
// endpoints of a URL, and a private one-member etcd a test may freeze or stop.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "sqlock/url.hpp"
#include "test_env.hpp"

namespace sqlock::test::etcd_env {

using namespace std::chrono_literals;

// Runs a shell command; its standard output.
inline std::string sh(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return out;
  std::array<char, 4096> buf{};
  while (auto n = std::fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  ::pclose(p);
  return out;
}

// "127.0.0.1:22379,..." from an etcd:// URL, for etcdctl.
inline std::string endpoints_of(const std::string& u) {
  auto parsed = url::parse(u);
  std::string out;
  for (auto& h : parsed.hosts)
    out += (out.empty() ? "" : ",") + h.host + ":" + std::to_string(h.port);
  return out;
}

inline std::string prefix_of(const std::string& u) {
  auto p = url::parse(u).path;
  return p.substr(1);
}

// A private one-member etcd that a test may freeze (SIGSTOP) or stop: the shared members are in
// use by the other tests at the same time.
class private_etcd {
 public:
  explicit private_etcd(int port) : port_(port) {
    std::string c = std::to_string(port), p = std::to_string(port + 1);
    pid_ = ::fork();
    if (pid_ == 0) {
      std::string data = (dir_.path / "data").string(), log = (dir_.path / "log").string();
      std::string peer = "http://127.0.0.1:" + p, client = "http://127.0.0.1:" + c;
      std::string cluster = "p=" + peer;
      ::execlp("etcd", "etcd", "--name", "p", "--data-dir", data.c_str(), "--listen-client-urls",
               client.c_str(), "--advertise-client-urls", client.c_str(), "--listen-peer-urls",
               peer.c_str(), "--initial-advertise-peer-urls", peer.c_str(), "--initial-cluster",
               cluster.c_str(), "--log-outputs", log.c_str(), "--logger", "zap", nullptr);
      ::_exit(127);
    }
    for (int i = 0; i < 100; ++i) {
      if (sh("ETCDCTL_API=3 etcdctl --endpoints=127.0.0.1:" + c +
             " --command-timeout=1s endpoint health 2>&1")
              .find("is healthy") != std::string::npos)
        return;
      std::this_thread::sleep_for(100ms);
    }
  }
  ~private_etcd() {
    ::kill(pid_, SIGCONT);
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  private_etcd(const private_etcd&) = delete;
  private_etcd& operator=(const private_etcd&) = delete;
  std::string url() const { return "etcd://127.0.0.1:" + std::to_string(port_) + "/private"; }
  void freeze() { ::kill(pid_, SIGSTOP); }
  void thaw() { ::kill(pid_, SIGCONT); }

 private:
  int port_;
  temp_dir dir_;
  pid_t pid_ = -1;
};

}  // namespace sqlock::test::etcd_env
