// The chaos worker: T threads × N cycles of acquire → fenced write (or read) → verify → release
// through the public library (sqlock::connect and, by --kind, make_lock, make_shared_mutex or
// make_semaphore: holders.hpp), each operation recorded in a history file (history.hpp) for
// tests/chaos/check_history.py. Several of these run at once under
// scripts/chaos/chaos.py, which injects the faults. `--list` instead prints the locks left
// under the prefix (the orphan check at the end of a run).
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fenced_store.hpp"
#include "history.hpp"
#include "holders.hpp"
#include "sqlock/backend.hpp"
#include "sqlock/client.hpp"
#ifdef SQLOCK_CHAOS_ZOOKEEPER
#include "sqlock/zookeeper/zookeeper.hpp"
#endif

namespace {

using namespace std::chrono;
using sqlock::chaos::monotonic_ns;

std::atomic<bool> stop_requested{false};
extern "C" void on_term(int) {
  stop_requested = true;
}

struct settings {
  std::string url, prefix = "chaos/", history_path, store_dir, kind = "exclusive";
  int threads = 4, clients = 0, names = 1, writers_percent = 20;
  std::uint32_t permits = 2;
  long cycles = 1000;
  double seconds = 0;
  long lease_ms = 2000, hold_us = 2000, acquire_timeout_ms = 30000;
  bool list = false;
};

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

class worker {
 public:
  worker(const settings& s, sqlock::chaos::history& h)
      : s_(s), h_(h), store_(s.store_dir), kind_(sqlock::chaos::parse_run_kind(s.kind)) {
    int n = s.clients > 0 ? s.clients : s.threads;
    for (int i = 0; i < n; ++i) clients_.push_back(sqlock::connect(s.url));
    const auto caps = clients_[0].caps();
    fencing_ = caps.fencing;
    if ((kind_ == sqlock::chaos::run_kind::shared && !caps.shared) ||
        (kind_ == sqlock::chaos::run_kind::semaphore && !caps.permits))
      throw std::runtime_error("the " + clients_[0].get_backend().kind() + " backend offers no " +
                               s.kind + " locks (caps)");
  }

  void run() {
    std::vector<std::thread> ts;
    for (int t = 0; t < s_.threads; ++t) ts.emplace_back([this, t] { thread_main(t); });
    for (auto& t : ts) t.join();
  }

  /// "# counter NAME N" lines of the backend's own counts that show a fault reached the path it
  /// is meant for (ZooKeeper: creates whose lost reply was recovered by the node's owner token).
  void record_counters() {
#ifdef SQLOCK_CHAOS_ZOOKEEPER
    if (clients_[0].get_backend().kind() != "zookeeper") return;
    std::uint64_t found = 0, losses = 0;
    for (auto& c : clients_) {
      auto st = sqlock::zookeeper::stats(c.get_backend());
      found += st.lost_replies_found;
      losses += st.connection_losses;
    }
    h_.line("# counter zookeeper_lost_replies_found " + std::to_string(found));
    h_.line("# counter zookeeper_connection_losses " + std::to_string(losses));
#endif
  }

 private:
  void log(std::int64_t start, int thread, int client, char ev, const std::string& name,
           const std::string& rest) {
    h_.line(std::to_string(start) + " " + std::to_string(monotonic_ns()) + " " +
            std::to_string(thread) + " " + std::to_string(client) + " " + ev + " " +
            sqlock::chaos::fenced_store::file_key(name) + (rest.empty() ? "" : " " + rest));
  }

  void thread_main(int t) {
    const int c = t % static_cast<int>(clients_.size());
    std::vector<std::unique_ptr<sqlock::chaos::holder>> locks;
    for (int i = 0; i < s_.names; ++i) {
      const std::string name = s_.prefix + std::to_string(i);
      locks.push_back(sqlock::chaos::make_holder(clients_[static_cast<std::size_t>(c)],
                                                 {.kind = kind_,
                                                  .name = name,
                                                  .lease = milliseconds(s_.lease_ms),
                                                  .permits = s_.permits,
                                                  .lost = [this, c, name](const std::string&) {
                                                    log(monotonic_ns(), -1, c, 'L', name, "");
                                                  }}));
    }
    std::mt19937_64 rng(std::random_device{}());
    const std::string writer = std::to_string(::getpid()) + "." + std::to_string(t);
    const auto end = s_.seconds > 0 ? steady_clock::now() + duration<double>(s_.seconds)
                                    : steady_clock::time_point::max();
    for (long cycle = 0; cycle < s_.cycles && !stop_requested && steady_clock::now() < end;
         ++cycle) {
      auto& l = *locks[static_cast<std::size_t>(rng() % locks.size())];
      cycle_once(l, t, c, writer, rng);
    }
  }

  // A shared_mutex cycle is a writer's (exclusive hold, fenced write) with --writers-percent
  // odds, else a reader's (shared hold, fenced read); a permit holder neither writes nor reads
  // (N holders at once have no fence order a store could enforce: history.hpp).
  void cycle_once(sqlock::chaos::holder& l, int t, int c, const std::string& writer,
                  std::mt19937_64& rng) {
    const std::string& name = l.name();
    const bool writes = kind_ == sqlock::chaos::run_kind::exclusive ||
                        (kind_ == sqlock::chaos::run_kind::shared &&
                         static_cast<int>(rng() % 100) < s_.writers_percent);
    auto start = monotonic_ns();
    try {
      if (!l.acquire(milliseconds(s_.acquire_timeout_ms), writes)) {
        log(start, t, c, 'T', name, l.kind());
        return;
      }
    } catch (const std::exception& ex) {
      log(start, t, c, 'E', name, l.kind() + " " + one_line(ex.what()));
      std::this_thread::sleep_for(milliseconds(50));
      return;
    }
    std::uint64_t fence = fencing_ ? l.fence() : 0;
    log(start, t, c, 'G', name, std::to_string(fence) + " " + l.owner() + " " + l.kind());
    if (fencing_ && writes) {
      start = monotonic_ns();
      auto r = store_.write(name, fence, writer);
      log(start, t, c, 'W', name,
          std::to_string(fence) + (r.accepted ? " accepted " : " rejected ") +
              std::to_string(r.highest) + " " + std::to_string(r.accepted_ns));
    } else if (fencing_ && kind_ == sqlock::chaos::run_kind::shared) {
      start = monotonic_ns();
      const auto highest = store_.read(name);
      log(start, t, c, 'O', name, std::to_string(fence) + " " + std::to_string(highest));
    }
    if (s_.hold_us > 0)
      std::this_thread::sleep_for(microseconds(static_cast<long>(rng() % (s_.hold_us + 1))));
    start = monotonic_ns();
    bool held = false;
    try {
      held = l.verify();
    } catch (const std::exception& ex) {
      log(start, t, c, 'E', name, l.kind() + " " + one_line(ex.what()));
    }
    log(start, t, c, 'V', name, held ? "ok" : "lost");
    start = monotonic_ns();
    const bool lost = l.release();
    log(start, t, c, 'R', name, lost ? "lost" : "held");
  }

  const settings& s_;
  sqlock::chaos::history& h_;
  sqlock::chaos::fenced_store store_;
  std::vector<sqlock::client> clients_;
  bool fencing_ = true;
  sqlock::chaos::run_kind kind_;
};

int list_locks(const settings& s) {
  auto rows = sqlock::connect(s.url).list(s.prefix);
  std::printf("rows %zu\n", rows.size());
  for (auto& r : rows)
    std::printf("row %s fence=%llu expires=%s holder=%s\n",
                sqlock::chaos::fenced_store::file_key(r.name).c_str(),
                static_cast<unsigned long long>(r.fence), r.expires_at.c_str(), r.holder.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  CLI::App app{"sqlock chaos worker: acquire -> fenced write -> release, with a history"};
  app.add_option("--url", s.url, "lock store URL")->required();
  app.add_option("--prefix", s.prefix, "lock name prefix (unique per run)")->capture_default_str();
  app.add_option("--names", s.names, "distinct lock names")->capture_default_str();
  app.add_option("--kind", s.kind, "what each cycle takes: exclusive, shared or semaphore")
      ->check(CLI::IsMember({"exclusive", "shared", "semaphore"}))
      ->capture_default_str();
  app.add_option("--permits", s.permits, "--kind semaphore: permits of each name")
      ->check(CLI::Range(1u, 1000u))
      ->capture_default_str();
  app.add_option("--writers-percent", s.writers_percent,
                 "--kind shared: share of cycles that take the lock exclusively")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  app.add_option("--threads", s.threads, "worker threads")->capture_default_str();
  app.add_option("--clients", s.clients, "clients shared by the threads (0 = one per thread)");
  app.add_option("--cycles", s.cycles, "cycles per thread")->capture_default_str();
  app.add_option("--seconds", s.seconds, "stop after this long (0 = no limit)");
  app.add_option("--lease-ms", s.lease_ms, "lease of each hold")->capture_default_str();
  app.add_option("--hold-us", s.hold_us, "longest random pause inside a hold")
      ->capture_default_str();
  app.add_option("--acquire-timeout-ms", s.acquire_timeout_ms, "bound of each acquire")
      ->capture_default_str();
  app.add_option("--history", s.history_path, "history file (truncated)");
  app.add_option("--store", s.store_dir, "fenced store directory");
  app.add_flag("--list", s.list, "print the locks left under --prefix and exit");
  CLI11_PARSE(app, argc, argv);
  try {
    if (s.list) return list_locks(s);
    if (s.history_path.empty() || s.store_dir.empty()) {
      std::fprintf(stderr, "chaos_worker: --history and --store are required\n");
      return 64;
    }
    struct sigaction sa {};
    sa.sa_handler = on_term;
    ::sigaction(SIGTERM, &sa, nullptr);
    ::sigaction(SIGINT, &sa, nullptr);
    sqlock::chaos::history h(s.history_path);
    h.line("# pid " + std::to_string(::getpid()) + " lease_ms " + std::to_string(s.lease_ms) +
           " threads " + std::to_string(s.threads) + " start " + std::to_string(monotonic_ns()) +
           " kind " + s.kind + " permits " + std::to_string(s.permits) + " writers_percent " +
           std::to_string(s.writers_percent));
    worker w(s, h);
    h.line("# connected " + std::to_string(monotonic_ns()));
    w.run();
    w.record_counters();
    h.line("# end " + std::to_string(monotonic_ns()));
    return 0;
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "chaos_worker: %s\n", ex.what());
    return 1;
  }
}
