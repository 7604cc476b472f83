// Freezing a test server with SIGSTOP, and knowing it is frozen. kill() only marks the stop
// pending: each thread of the process stops when it next runs in the kernel, so on a loaded
// machine a server thread can still answer a request sent just after kill() returned. A test
// that means "the server no longer answers" waits here until /proc shows every thread stopped.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace sqlock::test {

/// State letter of /proc/<pid>/task/<tid>/stat ("tid (comm) S ..."), or 0 when unreadable.
inline char task_state(const std::filesystem::path& stat) {
  std::ifstream in(stat);
  std::string line;
  if (!std::getline(in, line)) return 0;
  auto close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() ? 0 : line[close + 2];
}

/// True when every thread of `pid` is stopped (state T or t); false when one runs or the
/// process is gone.
inline bool all_threads_stopped(pid_t pid) {
  std::error_code ec;
  std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/task", ec);
  if (ec) return false;
  bool any = false;
  for (const auto& task : it) {
    char s = task_state(task.path() / "stat");
    if (s != 'T' && s != 't') return false;
    any = true;
  }
  return any;
}

/// Sends SIGSTOP to `pid` and waits (up to `bound`) until all its threads are stopped. Returns
/// whether they are; a test asserts on it, so a server that did not stop fails loudly instead of
/// answering one more request.
inline bool freeze_process(pid_t pid, std::chrono::milliseconds bound = std::chrono::seconds(5)) {
  if (pid <= 0 || ::kill(pid, SIGSTOP) != 0) return false;
  auto until = std::chrono::steady_clock::now() + bound;
  while (!all_threads_stopped(pid)) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace sqlock::test
