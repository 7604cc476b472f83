// The many-waiter program of the asynchronous API: on ONE client of a store, `waiters`
// acquisitions wait at once on `names` names held by that client (waiters/names each), started
// through acquire_async(). It checks that every waiter obtains its lock exactly once (and tells
// how many names were served in start order), that the process's threads (/proc/self/task) do
// not grow with the waiters (at most 4 more while they wait), and the store connections the
// process has open (its sockets to the server's port, /proc/self/net/tcp; at most 8; PostgreSQL
// and Redis: also the server's own count of those sessions, pg_stat_activity / CLIENT LIST).
// Then as many waits are started again and cancelled (a stop each): all must end with
// `interrupted`, and nothing of them may stay on the server (list(); PostgreSQL: no session of
// ours waiting; every name free for a newcomer's single attempt once the holds are released).
// Prints one table row (--header: the header first). CTest runs it with a small profile per
// store; scripts/bench/async_waiters.sh the full one.
// Exit 0: every check passed; 1: one failed (said on stderr); 77: the store's URL is unset.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sqlock/async.hpp"
#include "sqlock/client.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/random.hpp"

namespace {

using namespace std::chrono_literals;
using clk = std::chrono::steady_clock;

int failures = 0;

void check(bool ok, const std::string& what) {
  if (ok) return;
  ++failures;
  std::cerr << "FAILED: " << what << "\n";
}

int thread_count() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

/// A store of the program: its URL's variable (null: a local store) and URL options.
struct store_kind {
  const char* var;
  const char* options;
};

const std::map<std::string, store_kind>& store_kinds() {
  static const std::map<std::string, store_kind> kinds{
      {"memory", {nullptr, ""}},
      {"sqlite", {nullptr, ""}},
      // migrate=auto: on fresh servers this may run before any test that creates the schema.
      {"postgres", {"SQLOCK_TEST_POSTGRES_URL", "migrate=auto"}},
      {"postgres_advisory", {"SQLOCK_TEST_POSTGRES_URL", "mode=advisory&migrate=auto"}},
      {"mysql", {"SQLOCK_TEST_MYSQL_URL", "migrate=auto"}},
      {"redis", {"SQLOCK_TEST_REDIS_URL", ""}},
      {"zookeeper", {"SQLOCK_TEST_ZOOKEEPER_URL", ""}},
      {"etcd", {"SQLOCK_TEST_ETCD_URL", ""}},
  };
  return kinds;
}

/// The port of the URL's first host ("" when it has none).
std::string server_port(const std::string& url) {
  auto p = url.find("://");
  if (p == std::string::npos) return "";
  auto rest = url.substr(p + 3);
  rest = rest.substr(0, rest.find_first_of("/?,"));
  rest = rest.substr(rest.rfind('@') == std::string::npos ? 0 : rest.rfind('@') + 1);
  auto colon = rest.rfind(':');
  return colon == std::string::npos ? "" : rest.substr(colon + 1);
}

/// The local ports of this process's established TCP connections to `port` (any address).
std::vector<int> connections_to(const std::string& port) {
  std::set<std::string> inodes;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    auto target = std::filesystem::read_symlink(e.path(), ec).string();
    if (!ec && target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
  }
  std::vector<int> local;
  if (port.empty()) return local;
  const int want = std::stoi(port);
  for (const char* table : {"/proc/self/net/tcp", "/proc/self/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string sl, laddr, raddr, st, queues, tr, retr, uid, timeout, inode;
      f >> sl >> laddr >> raddr >> st >> queues >> tr >> retr >> uid >> timeout >> inode;
      const int rport = std::stoi(raddr.substr(raddr.rfind(':') + 1), nullptr, 16);
      if (st == "01" && rport == want && inodes.count(inode))
        local.push_back(std::stoi(laddr.substr(laddr.rfind(':') + 1), nullptr, 16));
    }
  }
  return local;
}

/// The output of a shell command ("" when it failed).
std::string run(const std::string& cmd) {
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    while (auto n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    if (::pclose(p) != 0) return "";
  }
  return out;
}

std::string port_list(const std::vector<int>& ports) {
  std::string s;
  for (int p : ports) s += (s.empty() ? "" : ",") + std::to_string(p);
  return s.empty() ? "0" : s;
}

/// The server's own count of the sessions at `ports` (-1: not asked), and with `waiting`, of
/// those waiting for a lock in the server. PostgreSQL: pg_stat_activity; Redis: CLIENT LIST.
int server_sessions(const std::string& store, const std::string& base_url,
                    const std::vector<int>& ports, bool waiting = false) {
  std::string out;
  if (store.rfind("postgres", 0) == 0) {
    out = run("psql -XAt '" + base_url + "' -c \"SELECT count(*) FROM pg_stat_activity WHERE " +
              "client_port IN (" + port_list(ports) + ")" +
              (waiting ? " AND wait_event_type = 'Lock'" : "") + "\" 2>/dev/null");
  } else if (store == "redis" && !waiting) {
    auto list = run("redis-cli -u '" + base_url + "' CLIENT LIST 2>/dev/null");
    int n = 0;
    for (int p : ports)
      if (list.find(":" + std::to_string(p) + " ") != std::string::npos) ++n;
    return list.empty() ? -1 : n;
  } else {
    return -1;
  }
  return out.empty() ? -1 : std::stoi(out);
}

/// Waits (at most `limit`) until `cond`; whether it held.
template <class F>
bool wait_until(F cond, clk::duration limit) {
  for (auto until = clk::now() + limit; !cond(); std::this_thread::sleep_for(2ms))
    if (clk::now() >= until) return false;
  return true;
}

std::string figure(int v) {
  return v < 0 ? "-" : std::to_string(v);
}

}  // namespace

int run_profile(int argc, char** argv);

int main(int argc, char** argv) {
  try {
    return run_profile(argc, argv);
  } catch (const std::exception& e) {
    // At once: the driver's threads may still run handlers of the waits started.
    std::cerr << "FAILED: " << e.what() << std::endl;
    std::_Exit(1);
  }
}

int run_profile(int argc, char** argv) {
  std::string store = "memory";
  int waiters = 200, names = 20;
  bool header = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--store" && i + 1 < argc)
      store = argv[++i];
    else if (a == "--waiters" && i + 1 < argc)
      waiters = std::atoi(argv[++i]);
    else if (a == "--names" && i + 1 < argc)
      names = std::atoi(argv[++i]);
    else if (a == "--header")
      header = true;
    else {
      std::cerr << "usage: " << argv[0] << " --store S [--waiters N] [--names M] [--header]\n";
      return 2;
    }
  }
  auto kind = store_kinds().find(store);
  if (kind == store_kinds().end() || names <= 0 || waiters < names || waiters % names) {
    std::cerr << "unknown store or waiters not a multiple of names\n";
    return 2;
  }
  const int per_name = waiters / names;
  const int own_threads = thread_count();  // the program's own: this thread

  // The store's URL.
  std::string base_url, url;
  auto dir = std::filesystem::temp_directory_path() /
             ("sqlock-waiters-" + sqlock::random_token().substr(0, 12));
  if (store == "memory") {
    url = "memory:waiters";
  } else if (store == "sqlite") {
    std::filesystem::create_directories(dir);
    url = "sqlite:" + (dir / "waiters.db").string();
  } else {
    const char* v = std::getenv(kind->second.var);
    if (!v || !*v) {
      const char* all = std::getenv("SQLOCK_TEST_REQUIRE_ALL");
      std::cerr << kind->second.var << " is unset\n";
      return all && std::string(all) == "1" ? 1 : 77;
    }
    base_url = url = v;
    if (*kind->second.options)
      url += (url.find('?') == std::string::npos ? "?" : "&") + std::string(kind->second.options);
  }

  auto c = sqlock::connect(url);
  const auto caps = c.caps();
  const std::string prefix = "sqlock-waiters:" + sqlock::random_token().substr(0, 10) + ":";
  std::vector<std::string> name(names);
  std::vector<sqlock::hold> first(names);
  for (int i = 0; i < names; ++i) {
    name[i] = prefix + std::to_string(i);
    first[i] = c.make_lock(name[i]).try_acquire_for(30s);
    check(static_cast<bool>(first[i]), "the first hold of " + name[i]);
  }
  // One wait first: the driver's and the client's notification threads run from here on.
  check(!sqlock::acquire_future(c.make_lock(name[0]), sqlock::async_wait::within(50ms)).get(),
        "a held name was obtained");
  const int threads_before = thread_count();
  // Waits long enough for the slowest full profile on a loaded machine, never forever.
  const auto deadline = clk::now() + 600s;
  // Per name, the order in which its waiters (numbered in start order) obtained it.
  std::mutex m;
  std::vector<std::vector<int>> served(names);
  std::atomic<int> obtained{0}, errors{0}, empty{0};
  for (int k = 0; k < per_name; ++k) {
    for (int i = 0; i < names; ++i)
      sqlock::acquire_async(c.make_lock(name[i]),
                            [&, i, k](std::exception_ptr e, sqlock::hold h) {
                              if (e)
                                ++errors;
                              else if (!h)
                                ++empty;
                              else {
                                std::lock_guard g(m);
                                served[i].push_back(k);
                                ++obtained;
                              }  // h is released as the handler returns: the next waiter's turn
                            },
                            {deadline, {}});
    // A moment between the rounds, so that a fair store queues them in this order.
    std::this_thread::sleep_for(std::chrono::milliseconds(std::max(20, names / 2)));
  }
  std::this_thread::sleep_for(200ms);
  const int threads_waiting = thread_count();
  const auto port = server_port(base_url);
  const auto conns = connections_to(port);
  const int conns_process = port.empty() ? -1 : static_cast<int>(conns.size());
  const int conns_server = server_sessions(store, base_url, conns);
  check(obtained == 0 && errors == 0 && empty == 0, "a waiter ended while every name was held");
  // No thread per waiter: at most a few more (a store's client library may grow its own pool,
  // as gRPC does), however many wait.
  check(threads_waiting - threads_before <= 4,
        "threads grew with the waiters: " + std::to_string(threads_before) + " -> " +
            std::to_string(threads_waiting));
  check(conns_process <= 8, "more than 8 connections to the store: " + figure(conns_process));

  const auto released = clk::now();
  for (auto& h : first) h.release();
  wait_until([&] { return obtained + errors + empty == waiters; }, deadline - clk::now());
  const double obtain_s = std::chrono::duration<double>(clk::now() - released).count();
  check(obtained == waiters, "obtained " + std::to_string(obtained.load()) + " of " +
                                 std::to_string(waiters) + " (errors " +
                                 std::to_string(errors.load()) + ", empty " +
                                 std::to_string(empty.load()) + ")");
  int in_order = 0;
  {
    std::lock_guard g(m);
    for (auto& s : served) {
      auto sorted = s;
      std::sort(sorted.begin(), sorted.end());
      check(sorted.size() == static_cast<std::size_t>(per_name) &&
                std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end(),
            "a waiter obtained its lock twice or never");
      if (std::is_sorted(s.begin(), s.end())) ++in_order;
    }
  }

  // Cancellation: as many waits again, each stopped on its own.
  for (int i = 0; i < names; ++i) first[i] = c.make_lock(name[i]).try_acquire_for(30s);
  std::vector<std::stop_source> stops(static_cast<std::size_t>(waiters));
  std::atomic<int> ended{0}, interrupted{0}, got{0};
  std::atomic<clk::rep> last_end{0};
  for (int w = 0; w < waiters; ++w)
    sqlock::acquire_async(c.make_lock(name[w % names]),
                          [&](std::exception_ptr e, sqlock::hold h) {
                            if (h) ++got;
                            if (e) {
                              try {
                                std::rethrow_exception(e);
                              } catch (const sqlock::interrupted&) {
                                ++interrupted;
                              } catch (...) {
                              }
                            }
                            auto now = clk::now().time_since_epoch().count();
                            for (auto l = last_end.load();
                                 now > l && !last_end.compare_exchange_weak(l, now);) {
                            }
                            ++ended;
                          },
                          {deadline, stops[static_cast<std::size_t>(w)].get_token()});
  std::this_thread::sleep_for(std::chrono::milliseconds(std::max(300, waiters / 5)));
  check(ended == 0, "a wait ended before it was cancelled");
  const auto cancelled = clk::now();
  for (auto& s : stops) s.request_stop();
  wait_until([&] { return ended == waiters; }, 60s);
  const double cancel_ms = std::chrono::duration<double, std::milli>(
                               clk::duration(last_end.load()) - cancelled.time_since_epoch())
                               .count();
  check(ended == waiters && interrupted == waiters && got == 0,
        "cancelled: ended " + std::to_string(ended.load()) + ", interrupted " +
            std::to_string(interrupted.load()) + ", obtained " + std::to_string(got.load()));
  // Nothing of the cancelled waits on the server.
  int left = 0;
  if (caps.list) {
    try {
      auto rows = c.list(prefix);
      std::set<std::string> owners;
      for (auto& h : first) owners.insert(h.owner());
      for (auto& r : rows)
        if (!owners.count(r.owner)) ++left;
      check(rows.size() == static_cast<std::size_t>(names) && left == 0,
            "list() after the cancellations: " + std::to_string(rows.size()) + " rows for " +
                std::to_string(names) + " holds");
    } catch (const std::exception& e) {
      check(false, std::string("list() after the cancellations: ") + e.what());
    }
  }
  const int waiting_sessions = server_sessions(store, base_url, connections_to(port), true);
  check(waiting_sessions <= 0, "sessions of ours still waiting in the server");
  for (auto& h : first) h.release();
  int free_names = 0;
  {
    auto newcomer = sqlock::connect(url);
    // One attempt each (a wait would hide an entry left in front of it); an attempt whose
    // answer did not come in time on a loaded machine is made again.
    for (int i = 0; i < names; ++i)
      for (int tries = 3; tries-- > 0;) {
        try {
          if (newcomer.make_lock(name[i]).try_acquire()) ++free_names;
          break;
        } catch (const sqlock::connection_error&) {
          if (tries == 0) throw;
        }
      }
  }
  check(free_names == names, "names still busy after the cancellations and the releases: " +
                                 std::to_string(names - free_names));

  if (header)
    std::cout << "| store | waiters/names | library threads (waiting) | threads added by the waits"
                 " | connections (process / server) | all obtained (s) | names in order | "
                 "cancel all (ms) | left on the server |\n|---|---|---|---|---|---|---|---|---|\n";
  char obtain_text[32], cancel_text[32];
  std::snprintf(obtain_text, sizeof obtain_text, "%.2f", obtain_s);
  std::snprintf(cancel_text, sizeof cancel_text, "%.1f", cancel_ms);
  std::cout << "| " << store << (caps.fair ? " (fair)" : "") << " | " << waiters << "/" << names
            << " | " << threads_waiting - own_threads << " | " << threads_waiting - threads_before
            << " | " << figure(conns_process) << " / " << figure(conns_server) << " | "
            << obtain_text << " | " << in_order << "/" << names << " | " << cancel_text << " | "
            << left + std::max(0, waiting_sessions) + names - free_names << " |" << std::endl;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return failures ? 1 : 0;
}
