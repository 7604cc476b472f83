// Redis servers and raw connections of the Redis tests: a hiredis admin connection for what
// the library deliberately does not do, and redis-server child processes of our own (free
// ports, no persistence) that destructive tests stop, freeze (SIGSTOP) and restart so the
// shared servers stay up for the tests running in parallel.
#pragma once

#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "freeze.hpp"
#include "sqlock/url.hpp"
#include "test_env.hpp"

namespace sqlock::test {

using namespace std::chrono_literals;

// ---- a raw admin connection (hiredis), for what the library deliberately does not do ----

struct raw_redis {
  redisContext* c = nullptr;
  explicit raw_redis(int port) {
    timeval tv{2, 0};
    c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (c && !c->err) redisSetTimeout(c, tv);
  }
  ~raw_redis() {
    if (c) redisFree(c);
  }
  bool ok() const { return c && !c->err; }
  // Runs a command; returns the reply as text ("(nil)", integers as digits, "ERR..." for errors,
  // arrays joined with '\n').
  std::string cmd(const std::vector<std::string>& argv) {
    std::vector<const char*> p;
    std::vector<size_t> l;
    for (auto& a : argv) {
      p.push_back(a.data());
      l.push_back(a.size());
    }
    auto* r = static_cast<redisReply*>(
        redisCommandArgv(c, static_cast<int>(p.size()), p.data(), l.data()));
    if (!r) return "(connection error)";
    std::string out = text(r);
    freeReplyObject(r);
    return out;
  }
  static std::string text(redisReply* r) {
    switch (r->type) {
      case REDIS_REPLY_NIL:
        return "(nil)";
      case REDIS_REPLY_INTEGER:
        return std::to_string(r->integer);
      case REDIS_REPLY_ARRAY: {
        std::string s;
        for (size_t i = 0; i < r->elements; ++i) s += (i ? "\n" : "") + text(r->element[i]);
        return s;
      }
      default:
        return std::string(r->str, r->len);
    }
  }
};

inline int port_of(const std::string& url, std::size_t index = 0) {
  auto u = sqlock::url::parse(url);
  return u.hosts.at(index).port;
}

// ---- servers of our own for destructive tests ----

inline int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// One redis-server child process (not daemonized: we own its pid).
class own_server {
 public:
  /// A server in `dir`; `extra` are more redis-server arguments ("--requirepass", "...").
  own_server(std::string bin, std::filesystem::path dir, std::vector<std::string> extra = {})
      : bin_(std::move(bin)), dir_(std::move(dir)), extra_(std::move(extra)) {
    port_ = free_port();
  }
  ~own_server() { stop(); }
  own_server(const own_server&) = delete;
  own_server& operator=(const own_server&) = delete;

  void start() {
    std::filesystem::create_directories(dir_);
    pid_ = ::fork();
    if (pid_ == 0) {
      std::vector<std::string> args = {
          bin_,          "--bind", "127.0.0.1",    "--port",    std::to_string(port_),
          "--save",      "",       "--appendonly", "no",        "--daemonize",
          "no",          "--dir",  dir_.string(),  "--logfile", (dir_ / "redis.log").string(),
          "--maxmemory", "32mb"};
      args.insert(args.end(), extra_.begin(), extra_.end());
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(bin_.c_str(), argv.data());
      ::_exit(127);
    }
    for (int i = 0; i < 200; ++i) {  // up to 20 s on a loaded machine
      raw_redis r(port_);
      if (r.ok()) {
        const auto pong = r.cmd({"PING"});
        if (pong == "PONG" || pong.rfind("NOAUTH", 0) == 0) return;
      }
      std::this_thread::sleep_for(100ms);
    }
    ADD_FAILURE() << "redis-server on port " << port_ << " did not start";
  }
  // Crash-stop: SIGKILL, no goodbye to clients.
  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int st = 0;
    ::waitpid(pid_, &st, 0);
    pid_ = -1;
  }
  /// Sends `sig` to the server (SIGCONT thaws it).
  void signal(int sig) const {
    if (pid_ > 0) ::kill(pid_, sig);
  }
  /// Stops the server and returns once every thread of it is stopped.
  [[nodiscard]] bool freeze() const { return freeze_process(pid_); }
  int port() const { return port_; }

 private:
  std::string bin_;
  std::filesystem::path dir_;
  std::vector<std::string> extra_;
  int port_ = 0;
  pid_t pid_ = -1;
};

class own_masters {
 public:
  own_masters(std::size_t n, const std::filesystem::path& tmp) {
    std::string bin = env("SQLOCK_TEST_REDIS_SERVER");
    if (bin.empty()) bin = "redis-server";
    for (std::size_t i = 0; i < n; ++i) {
      servers.push_back(std::make_unique<own_server>(bin, tmp / ("node" + std::to_string(i))));
      servers.back()->start();
    }
  }
  std::string url(const std::string& query = "") const {
    std::string u = "redlock://";
    for (std::size_t i = 0; i < servers.size(); ++i)
      u += (i ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(servers[i]->port());
    return u + query;
  }
  std::vector<std::unique_ptr<own_server>> servers;
};

}  // namespace sqlock::test
