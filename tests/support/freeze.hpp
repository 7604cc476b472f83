// Freezing a test server with SIGSTOP, and knowing it is frozen. kill() only marks the stop
// pending: each thread of the process stops when it next runs in the kernel, so on a loaded
// machine a server thread can still answer a request sent just after kill() returned. A test
// that means "the server no longer answers" waits here until /proc shows every thread stopped.
#pragma once

#include <errno.h>
#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace sqlock::test {

/// State letter and parent of a /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat file
/// ("pid (comm) S ppid ..."); state 0 when unreadable.
struct proc_stat {
  char state = 0;
  pid_t ppid = 0;
};
inline proc_stat read_proc_stat(const std::filesystem::path& stat) {
  std::ifstream in(stat);
  std::string line;
  proc_stat out;
  if (!std::getline(in, line)) return out;
  auto close = line.rfind(')');  // comm may hold spaces and parentheses
  if (close == std::string::npos ||
      std::sscanf(line.c_str() + close + 1, " %c %d", &out.state, &out.ppid) != 2)
    return {};
  return out;
}

/// True when no thread of `pid` can answer any more: every one is stopped (state T or t) or
/// dead (Z, X: a server's child that exited while its parent was being stopped stays a zombie
/// until the parent runs again), or the process is gone.
inline bool all_threads_stopped(pid_t pid) {
  std::error_code ec;
  std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/task", ec);
  if (ec) return !std::filesystem::exists("/proc/" + std::to_string(pid));
  for (const auto& task : it) {
    char s = read_proc_stat(task.path() / "stat").state;
    if (s != 'T' && s != 't' && s != 'Z' && s != 'X' && s != 0) return false;
  }
  return true;
}

/// Sends SIGSTOP to `pid` and waits (up to `bound`) until all its threads are stopped. Returns
/// whether they are; a test asserts on it, so a server that did not stop fails loudly instead of
/// answering one more request.
inline bool freeze_process(pid_t pid, std::chrono::milliseconds bound = std::chrono::seconds(5)) {
  if (pid <= 0) return false;
  if (::kill(pid, SIGSTOP) != 0) return errno == ESRCH;  // gone: it answers nothing either
  auto until = std::chrono::steady_clock::now() + bound;
  while (!all_threads_stopped(pid)) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace sqlock::test
