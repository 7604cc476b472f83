// A command that runs CMD under a hold (held_command.hpp): signals, the loss path
// and CMD itself. CMD gets its own process group (the terminal's foreground group when sqlock
// had it), so a lost lease stops CMD and everything it started, not just its first process.
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <iostream>
#include <mutex>
#include <thread>
#include <vector>

#include "held_command.hpp"
#include "sqlock/random.hpp"
#include "sqlock/url.hpp"

extern char** environ;

namespace sqlock::cli {
namespace {

// A shorter lease is lost before the first renewal can reach the store.
constexpr milliseconds min_lease{500};
// The time a first connection always gets under --wait, even --wait 0 (-n).
constexpr milliseconds connect_floor{1000};

// connecting: nothing asked of the store yet; 0: waiting for the lock; > 0: CMD's pid (= its
// process group); -1: CMD reaped; holding: `sqlock hold` has the lock and waits for a signal.
constexpr pid_t holding = -2;
constexpr pid_t connecting = -3;
std::atomic<pid_t> child_pid{connecting};
std::atomic<bool> lease_lost{false};

// A signal while waiting stops the wait (the backend removes the waiter's queue node, key or
// server-side wait, as at a timeout); sqlock then exits 128 + the signal. If that cleanup has
// not ended the wait within cleanup_bound, sqlock exits anyway.
constexpr milliseconds cleanup_bound{2000};
std::stop_source wait_stop;
std::atomic<int> wait_signal{0};
std::mutex settle_m;
std::condition_variable settle_cv;
bool settled = false;  // the wait is over (guarded by settle_m)

void interrupted_message() {
  std::cerr << "sqlock: interrupted while waiting for the lock\n";
}

// The wait is over, whichever way: the cleanup bound no longer applies.
void settle() {
  {
    std::lock_guard g(settle_m);
    settled = true;
  }
  settle_cv.notify_all();
}

// First signal while waiting: start the cleanup bound, then ask the wait to stop.
void stop_waiting(int sig) {
  if (wait_signal.exchange(sig) != 0) return;  // a stop is under way
  std::thread([sig] {
    std::unique_lock lk(settle_m);
    if (settle_cv.wait_for(lk, cleanup_bound, [] { return settled; })) return;
    interrupted_message();
    ::_exit(128 + sig);
  }).detach();
  wait_stop.request_stop();  // may cancel a server-side wait from this thread
}

// What ends `sqlock hold`: a signal or the loss of the lease.
std::mutex hold_m;
std::condition_variable hold_cv;
int hold_signal = 0;  // guarded by hold_m

}  // namespace

// The grace period after a loss: the group gets SIGTERM at once and SIGKILL when it ends.
class stopper {
 public:
  explicit stopper(milliseconds grace) : grace_(grace) {}
  stopper(const stopper&) = delete;
  stopper& operator=(const stopper&) = delete;
  ~stopper() { stop_killer(); }
  // Starts the grace period (once): SIGTERM to the group now, SIGKILL to it later if CMD has
  // not been reaped by then (after reaping, finish() takes over).
  void start(pid_t pgid) {
    std::lock_guard g(m_);
    if (started_) return;
    started_ = true;
    deadline_ = std::chrono::steady_clock::now() + grace_;
    ::kill(-pgid, SIGTERM);
    killer_ = std::thread([this, pgid] {
      std::unique_lock lk(m_);
      if (!cv_.wait_until(lk, deadline_, [this] { return reaped_; })) ::kill(-pgid, SIGKILL);
    });
  }
  // After CMD was reaped on a loss: waits out the grace period while the group still has
  // members, then kills what is left and reaps it (sqlock is their subreaper).
  void finish(pid_t pgid) {
    stop_killer();
    steady_time deadline;
    {
      std::lock_guard g(m_);
      deadline = deadline_;
    }
    while (group_alive(pgid) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ::kill(-pgid, SIGKILL);
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (group_alive(pgid)) {
      if (std::chrono::steady_clock::now() >= give_up) {
        std::cerr << "sqlock: processes of group " << pgid
                  << " survive SIGKILL (stuck in the kernel?)\n";
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

 private:
  void stop_killer() {
    {
      std::lock_guard g(m_);
      reaped_ = true;
    }
    cv_.notify_all();
    if (killer_.joinable()) killer_.join();
  }
  static bool group_alive(pid_t pgid) {
    while (::waitpid(-pgid, nullptr, WNOHANG) > 0) {  // reap members re-parented to sqlock
    }
    return ::kill(-pgid, 0) == 0;
  }

  milliseconds grace_;
  std::mutex m_;
  std::condition_variable cv_;
  bool started_ = false, reaped_ = false;
  steady_time deadline_{};
  std::thread killer_;
};

namespace {

// Signals are blocked in every thread and handled here: while connecting they end sqlock at
// once (nothing was asked of the store yet); while waiting they stop the wait (stop_waiting);
// while CMD runs they go to its group; `sqlock hold` is told and releases.
void signal_thread(sigset_t set) {
  for (;;) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) continue;
    pid_t pid = child_pid.load();
    if (pid > 0) {
      ::kill(-pid, sig);
    } else if (pid == holding) {
      std::lock_guard g(hold_m);
      hold_signal = sig;
      hold_cv.notify_all();
    } else if (pid == 0) {
      stop_waiting(sig);
      // CMD may have started meanwhile: held_command::run() stores child_pid, then reads
      // wait_signal; this stored wait_signal, then reads child_pid (both seq_cst), so one of
      // the two sees the other and the signal is never lost (at worst CMD's group gets it twice).
      if (pid_t started = child_pid.load(); started > 0) ::kill(-started, sig);
    } else if (pid == connecting) {
      interrupted_message();
      ::_exit(128 + sig);
    }
  }
}

// Makes CMD's group the terminal's foreground group while it runs, when sqlock's group was.
class terminal {
 public:
  terminal() : ours_(::isatty(0) && ::tcgetpgrp(0) == ::getpgrp()) {}
  bool ours() const { return ours_; }
  void give(pid_t pgid) const {
    if (ours_) with_ttou_ignored([pgid] { ::tcsetpgrp(0, pgid); });
  }
  void take_back() const {
    if (ours_) with_ttou_ignored([] { ::tcsetpgrp(0, ::getpgrp()); });
  }

 private:
  template <class F>
  static void with_ttou_ignored(F f) {
    struct sigaction ign {
    }, old{};
    ign.sa_handler = SIG_IGN;
    ::sigaction(SIGTTOU, &ign, &old);
    f();
    ::sigaction(SIGTTOU, &old, nullptr);
  }
  bool ours_;
};

// What the child needs between clone() and exec, all prepared by the parent.
struct exec_plan {
  char** argv;
  char** envp;
  sigset_t mask;  // the signal mask sqlock started with, CMD's
  pid_t parent;
  const terminal* tty;
  bool quiet;
};

// The child: in its own process group (the terminal's foreground one when sqlock's was),
// killed when sqlock dies, then CMD. Only exec-safe calls: it runs in sqlock's memory.
int exec_child(void* arg) {
  const auto& p = *static_cast<const exec_plan*>(arg);
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // CMD never outlives sqlock
  if (::getppid() != p.parent) ::_exit(1);
  ::setpgid(0, 0);
  p.tty->give(::getpid());  // as well as the parent: whichever runs first
  pthread_sigmask(SIG_SETMASK, &p.mask, nullptr);
  ::execvpe(p.argv[0], p.argv, p.envp);
  int err = errno;
  if (p.quiet) ::_exit(err == ENOENT ? 127 : 126);  // -q: the exit code tells
  const char* msg = err == ENOENT ? ": command not found\n" : ": cannot execute: ";
  (void)!::write(2, "sqlock: ", 8);
  (void)!::write(2, p.argv[0], std::strlen(p.argv[0]));
  (void)!::write(2, msg, std::strlen(msg));
  if (err != ENOENT) {
    (void)!::write(2, std::strerror(err), std::strlen(std::strerror(err)));
    (void)!::write(2, "\n", 1);
  }
  ::_exit(err == ENOENT ? 127 : 126);
}

// Starts CMD as posix_spawn() does: clone(CLONE_VM | CLONE_VFORK) runs exec_child() on a stack
// of its own in sqlock's memory, and sqlock continues once CMD's exec has happened (or failed).
// Unlike fork() nothing of sqlock's memory is copied or marked copy-on-write, which costs a
// short command measurably (posix_spawn() itself cannot set PR_SET_PDEATHSIG in the child).
// The stack holds execvpe()'s copy of argv for a script without #! (run through /bin/sh).
// Returns the child's pid, or -1 with errno.
pid_t spawn(exec_plan& plan) {
  std::size_t argc = 0;
  while (plan.argv[argc]) ++argc;
  std::vector<std::max_align_t> stack((argc + 2) * sizeof(char*) / sizeof(std::max_align_t) +
                                      32 * 1024 / sizeof(std::max_align_t));
  void* top = stack.data() + stack.size();  // the stack grows down; aligned to 16
  return ::clone(exec_child, top, CLONE_VM | CLONE_VFORK | SIGCHLD, &plan);
}

// The longest default holder text: stores keep at least 255 bytes (MariaDB's advisory mode).
constexpr std::size_t max_default_holder = 200;

// "host:pid:CMD ARGS..." (`sh -c STRING` for -c; "sqlock hold" for hold), passwords masked
// (a command line may carry a URL), cut at max_default_holder bytes on a character boundary.
std::string default_cli_holder(const run_args& a) {
  std::string host_pid = default_holder();  // "host:pid:program"
  host_pid.erase(host_pid.rfind(':') + 1);
  std::string cmd = a.shell_command.empty() ? "" : "sh -c " + a.shell_command;
  for (const auto& w : a.command) cmd += (cmd.empty() ? "" : " ") + w;
  if (cmd.empty()) cmd = "sqlock hold";
  std::string text = shown(host_pid + cmd);
  if (text.size() > max_default_holder) {
    auto cut = max_default_holder;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;
    text.erase(cut);
  }
  return text;
}

client connect_for(const run_args& a, sigset_t& old, steady_time deadline) {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) sigaddset(&set, s);
  pthread_sigmask(SIG_BLOCK, &set, &old);  // before any thread exists, so all inherit it
  std::thread(signal_thread, set).detach();

  if (a.quiet) std::cerr.rdbuf(nullptr);  // messages are dropped from here on
  client_options opts;
  opts.holder = a.holder.empty() ? default_cli_holder(a) : a.holder;
  if (a.verbose)
    opts.observer = make_logger(log_level::trace, [](log_level, std::string_view message) {
      std::string line = "sqlock: " + shown(message) + "\n";
      (void)!::write(2, line.data(), line.size());  // one write: lines never interleave
    });
  return connect(with_mode(resolve_url(a.url), a.mode), std::move(opts), deadline);
}

milliseconds checked_lease(const run_args& a) {
  auto lease = parse_duration(a.lease);
  if (lease < min_lease)
    throw config_error("--lease " + a.lease +
                       " is too short for renewal to keep it (minimum 500ms)");
  return lease;
}

std::optional<milliseconds> parsed_wait(const run_args& a) {
  if (a.wait.empty()) return std::nullopt;
  return parse_duration(a.wait);
}
}  // namespace

held_command::held_command(const run_args& a)
    : a_(a),
      lease_(checked_lease(a)),
      wait_(parsed_wait(a)),
      start_(std::chrono::steady_clock::now()),
      stop_(std::make_unique<stopper>(parse_duration(a.kill_after))),
      // --wait covers connecting too: a store that does not answer costs no more than --wait
      // (at least connect_floor: a healthy store's first connection, even with -n).
      client_(connect_for(a, old_,
                          wait_ ? start_ + std::max(*wait_, connect_floor) : steady_time::max())) {
  child_pid = 0;  // connected: from here a signal stops the wait
}

held_command::~held_command() = default;

std::optional<milliseconds> held_command::wait() const {
  if (!wait_) return std::nullopt;
  auto spent = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start_);
  return std::max(*wait_ - spent, milliseconds(0));
}

std::function<void(const std::string&)> held_command::on_lost() {
  if (a_.command.empty() && a_.shell_command.empty())  // `sqlock hold`
    return [](const std::string& name) {
      std::cerr << "sqlock: lease of '" << name << "' lost\n";
      std::lock_guard g(hold_m);
      lease_lost = true;
      hold_cv.notify_all();
    };
  return [stop = stop_.get()](const std::string& name) {
    lease_lost = true;
    std::cerr << "sqlock: lease of '" << name << "' lost; stopping the command\n";
    if (pid_t pid = child_pid.load(); pid > 0) stop->start(pid);
  };
}

std::stop_token held_command::stop() const {
  return wait_stop.get_token();
}

int held_command::waiting(const std::function<int()>& body) const {
  try {
    return body();
  } catch (const interrupted&) {
    settle();
    interrupted_message();
    return 128 + wait_signal.load();
  }
}

int held_command::wait_over() const {
  settle();
  if (wait_signal.load() == 0) return 0;
  interrupted_message();  // obtained as the signal came: given back at once
  return 128 + wait_signal.load();
}

int held_command::not_obtained() const {
  std::string message = "lock '" + a_.name + "' not obtained within " +
                        duration_text(wait_.value_or(milliseconds(0)));
  if (auto who = holders_of(client_, a_.name); !who.empty()) message += " (held by " + who + ")";
  std::cerr << "sqlock: " << shown(message) << "\n";
  return a_.conflict_exit;
}

int held_command::run(const std::string& fence, const std::string& owner) {
  if (int code = wait_over()) return code;
  std::vector<std::string> args = a_.command;
  if (!a_.shell_command.empty()) args = {"sh", "-c", a_.shell_command};
  auto& stop = *stop_;

  // Everything the child needs is prepared before it starts: only exec-safe calls in it.
  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    if (kv.rfind("SQLOCK_NAME=", 0) == 0 || kv.rfind("SQLOCK_FENCE=", 0) == 0 ||
        kv.rfind("SQLOCK_OWNER=", 0) == 0)
      continue;
    env_store.push_back(std::move(kv));
  }
  env_store.push_back("SQLOCK_NAME=" + a_.name);
  env_store.push_back("SQLOCK_FENCE=" + fence);
  env_store.push_back("SQLOCK_OWNER=" + owner);
  std::vector<char*> envp, argv;
  for (auto& s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  const sigset_t old = old_;

  terminal tty;
  // Orphans of CMD's group come back to sqlock, so the group can be reaped after a loss.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  exec_plan plan{argv.data(), envp.data(), old, ::getpid(), &tty, a_.quiet};
  pid_t pid = spawn(plan);
  if (pid < 0) {
    int err = errno;
    throw error(std::string("cannot start the command: ") + std::strerror(err));
  }
  ::setpgid(pid, pid);
  tty.give(pid);
  child_pid = pid;
  // A signal taken for the wait after wait_over() looked: CMD's group gets it instead.
  if (int sig = wait_signal.load()) ::kill(-pid, sig);
  if (lease_lost) stop.start(pid);  // lost between acquiring and starting CMD
  int status = 0;
  for (;;) {
    if (::waitpid(pid, &status, tty.ours() ? WUNTRACED : 0) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (!WIFSTOPPED(status)) break;
    // Ctrl-Z stopped CMD: stop sqlock too, so the shell's job control sees the job stopped;
    // `fg` (or `bg`) continues sqlock, which continues CMD (in the foreground after `fg`).
    tty.take_back();
    ::kill(::getpid(), SIGSTOP);
    if (::tcgetpgrp(0) == ::getpgrp()) tty.give(pid);  // `fg`, not `bg`
    ::kill(-pid, SIGCONT);
  }
  child_pid = -1;  // reaped: signals no longer go anywhere
  tty.take_back();
  if (lease_lost) {
    stop.start(pid);  // no-op unless the loss came as CMD exited
    stop.finish(pid);
  }
  if (lease_lost) return software;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return software;
}

int held_command::hold_until_signal(const std::string& fence) {
  if (int code = wait_over()) return code;
  child_pid = holding;
  std::cout << fence << std::endl;  // flushed: a script reads it while sqlock holds
  std::unique_lock g(hold_m);
  if (hold_signal == 0) hold_signal = wait_signal.load();  // one that came after wait_over()
  hold_cv.wait(g, [] { return hold_signal != 0 || lease_lost; });  // until told: no deadline
  return lease_lost ? software : ok;
}

}  // namespace sqlock::cli
