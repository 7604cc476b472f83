// A peer client in a process of its own (redis-py, kazoo, etcdctl...) that a test talks to line
// by line: commands on its standard input, one answer line each on its standard output, read
// with a deadline. The destructor ends the process (SIGKILL) and reaps it.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace sqlock::test {

class peer_process {
 public:
  /// Starts `argv` (argv[0] a path) with pipes on its standard input and output.
  explicit peer_process(const std::vector<std::string>& argv) {
    ::signal(SIGPIPE, SIG_IGN);  // a peer that died makes say() throw, not the test die
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0)
      throw std::runtime_error("pipe failed");
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    to_ = in[1];
    from_ = out[0];
  }
  ~peer_process() {
    ::close(to_);
    ::close(from_);
    ::kill(pid_, SIGKILL);
    int st = 0;
    ::waitpid(pid_, &st, 0);
  }
  peer_process(const peer_process&) = delete;
  peer_process& operator=(const peer_process&) = delete;

  /// Sends one command line.
  void say(const std::string& line) {
    const std::string l = line + "\n";
    if (::write(to_, l.data(), l.size()) != static_cast<ssize_t>(l.size()))
      throw std::runtime_error("peer process gone");
  }
  /// The next answer line, or nullopt when none came within `wait` (or the process ended).
  std::optional<std::string> line(std::chrono::milliseconds wait) {
    const auto until = std::chrono::steady_clock::now() + wait;
    for (;;) {
      if (auto at = buf_.find('\n'); at != std::string::npos) {
        std::string l = buf_.substr(0, at);
        buf_.erase(0, at + 1);
        return l;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          until - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{from_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char b[512];
      const auto n = ::read(from_, b, sizeof b);
      if (n <= 0) return std::nullopt;
      buf_.append(b, static_cast<std::size_t>(n));
    }
  }
  /// say(command), then its answer within `wait` ("" when none came).
  std::string ask(const std::string& command,
                  std::chrono::milliseconds wait = std::chrono::seconds(20)) {
    say(command);
    return line(wait).value_or("");
  }

 private:
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  std::string buf_;
};

}  // namespace sqlock::test
