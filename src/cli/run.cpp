// `sqlock run NAME -- CMD`: CMD runs while the lock is held and renewed.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <thread>

#include "common.hpp"
#include "sqlock/url.hpp"

extern char** environ;

namespace sqlock::cli {
namespace {

std::atomic<pid_t> child_pid{0};
std::atomic<bool> lease_lost{false};

// Signals are blocked in every thread and handled here: before CMD starts they end sqlock
// (nothing is held yet: the wait is simply abandoned); while CMD runs they are passed to it.
void signal_thread(sigset_t set) {
  for (;;) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) continue;
    pid_t pid = child_pid.load();
    if (pid > 0) {
      ::kill(pid, sig);
    } else if (pid == 0) {
      std::cerr << "sqlock: interrupted while waiting for the lock\n";
      ::_exit(128 + sig);
    }
  }
}

void escalate_later(pid_t pid) {
  std::thread([pid] {
    std::this_thread::sleep_for(std::chrono::seconds(10));
    if (child_pid.load() == pid) ::kill(pid, SIGKILL);  // still not reaped: it ignored SIGTERM
  }).detach();
}

}  // namespace

int run_command(const run_args& a) {
  std::optional<milliseconds> wait;
  if (!a.wait.empty()) wait = parse_duration(a.wait);
  auto lease = parse_duration(a.lease);
  if (a.command.empty()) throw config_error("run needs a command after --");

  sigset_t set, old;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&set, s);
  pthread_sigmask(SIG_BLOCK, &set, &old);  // before any thread exists, so all inherit it
  std::thread(signal_thread, set).detach();

  auto c = connect(with_mode(resolve_url(a.url), a.mode));
  auto l = c.make_lock(a.name, {.lease = lease});
  l.on_lost([](const std::string& name) {
    lease_lost = true;
    std::cerr << "sqlock: lease of '" << name << "' lost; stopping the command\n";
    pid_t pid = child_pid.load();
    if (pid > 0) {
      ::kill(pid, SIGTERM);
      escalate_later(pid);
    }
  });
  bool got = wait ? l.try_lock_for(*wait) : (l.lock(), true);
  if (!got) {
    std::cerr << "sqlock: lock '" << a.name << "' not obtained within " << a.wait << "\n";
    return tempfail;
  }
  std::string fence;
  try {
    fence = std::to_string(l.fence());
  } catch (const unsupported&) {
    // No fencing on this backend: SQLOCK_FENCE stays empty.
  }

  // Everything the child needs is prepared before fork(): only exec-safe calls after it.
  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    if (kv.rfind("SQLOCK_NAME=", 0) == 0 || kv.rfind("SQLOCK_FENCE=", 0) == 0 ||
        kv.rfind("SQLOCK_OWNER=", 0) == 0)
      continue;
    env_store.push_back(std::move(kv));
  }
  env_store.push_back("SQLOCK_NAME=" + a.name);
  env_store.push_back("SQLOCK_FENCE=" + fence);
  env_store.push_back("SQLOCK_OWNER=" + l.owner());
  std::vector<char*> envp, argv;
  for (auto& s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = a.command;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);

  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    l.unlock();
    throw error(std::string("fork failed: ") + std::strerror(err));
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // CMD never outlives sqlock
    if (::getppid() != parent) ::_exit(1);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    ::execvpe(argv[0], argv.data(), envp.data());
    int err = errno;
    const char* msg = "sqlock: cannot execute command: ";
    (void)!::write(2, msg, std::strlen(msg));
    (void)!::write(2, std::strerror(err), std::strlen(std::strerror(err)));
    (void)!::write(2, "\n", 1);
    ::_exit(err == ENOENT ? 127 : 126);
  }
  child_pid = pid;
  if (lease_lost) {  // lost between acquiring and starting CMD
    ::kill(pid, SIGTERM);
    escalate_later(pid);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  child_pid = -1;  // reaped: signals no longer go anywhere
  l.unlock();
  if (lease_lost) return software;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return software;
}

}  // namespace sqlock::cli
