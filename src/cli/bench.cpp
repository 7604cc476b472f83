// `sqlock bench`: lock/unlock pairs per second, pair latency and (with --contended) handoff,
// through the blocking API or (--async) the asynchronous one's future form.
#include <algorithm>
#include <atomic>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "common.hpp"
#include "sqlock/async.hpp"
#include "sqlock/random.hpp"
#include "sqlock/url.hpp"

namespace sqlock::cli {
namespace {

using clock = std::chrono::steady_clock;

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  auto idx = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(idx), v.end());
  return v[idx];
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now().time_since_epoch())
      .count();
}

}  // namespace

int bench_command(const bench_args& a) {
  auto duration = parse_duration(a.duration);
  auto lease = parse_duration(a.lease);
  if (duration.count() <= 0) throw config_error("--duration must be > 0");
  std::string url = with_mode(resolve_url(a.url), a.mode);
  const std::string tag = "sqlock-bench:" + random_token().substr(0, 8) + ":";

  // One client per thread, as separate processes would have: contention then goes through the
  // backend instead of the in-process queue. --one-client: the threads of one application
  // sharing its client, its connection budget and its in-process queue.
  std::vector<client> clients;
  for (int t = 0; t < (a.one_client ? 1 : a.threads); ++t) clients.push_back(connect(url));
  auto client_of = [&](std::size_t t) -> client& { return clients[a.one_client ? 0 : t]; };
  const auto& b = clients.front().get_backend();

  // Handoff: the release start time per shared lock, read by the next holder.
  std::vector<std::atomic<std::int64_t>> released_at(static_cast<std::size_t>(a.locks));
  for (auto& r : released_at) r = 0;

  std::atomic<bool> go{false}, stop{false};
  std::atomic<std::uint64_t> total{0};
  std::vector<std::vector<double>> lat(static_cast<std::size_t>(a.threads)),
      hand(static_cast<std::size_t>(a.threads));
  std::vector<std::string> errors(static_cast<std::size_t>(a.threads));
  std::vector<std::thread> ts;
  for (int t = 0; t < a.threads; ++t) {
    ts.emplace_back([&, t] {
      auto ti = static_cast<std::size_t>(t);
      try {
        std::vector<mutex> locks;
        std::vector<shared_mutex> shared;
        std::vector<semaphore> sems;
        permit held;
        hold async_held;  // --async
        for (int k = 0; k < a.locks; ++k) {
          std::string name = a.contended ? tag + std::to_string(k)
                                         : tag + std::to_string(t) + ":" + std::to_string(k);
          if (a.shared)
            shared.push_back(client_of(ti).make_shared_mutex(name, {.lease = lease}));
          else if (a.permits > 0)
            sems.push_back(client_of(ti).make_semaphore(name, a.permits, {.lease = lease}));
          else
            locks.push_back(client_of(ti).make_lock(name, {.lease = lease}));
        }
        auto take = [&](std::size_t k) {
          if (a.async_api) {
            async_held = a.shared        ? acquire_shared_future(shared[k]).get()
                         : a.permits > 0 ? acquire_future(sems[k]).get()
                                         : acquire_future(locks[k]).get();
            if (!async_held) throw std::runtime_error("an acquire without a deadline ended empty");
          } else if (a.shared)
            shared[k].lock_shared();
          else if (a.permits > 0)
            held = sems[k].acquire();
          else
            locks[k].lock();
        };
        auto give = [&](std::size_t k) {
          if (a.async_api)
            async_held.release();
          else if (a.shared)
            shared[k].unlock_shared();
          else if (a.permits > 0)
            held.release();
          else
            locks[k].unlock();
        };
        lat[ti].reserve(1 << 16);
        while (!go) std::this_thread::yield();
        for (std::size_t i = ti;; ++i) {
          if (stop) break;
          std::size_t k = i % static_cast<std::size_t>(a.locks);
          auto t0 = now_ns();
          take(k);
          auto t1 = now_ns();
          if (a.contended) {
            auto rel = released_at[k].load();
            if (rel > 0 && t1 - t0 > 0 && rel >= t0)
              hand[ti].push_back(static_cast<double>(std::max<std::int64_t>(0, t1 - rel)) / 1000.0);
            released_at[k] = now_ns();
          }
          give(k);
          lat[ti].push_back(static_cast<double>(now_ns() - t0) / 1000.0);
          ++total;
        }
      } catch (const std::exception& e) {
        errors[ti] = e.what();
        stop = true;
      }
    });
  }
  auto start = clock::now();
  go = true;
  auto end = start + duration;
  while (clock::now() < end && !stop) {
    std::this_thread::sleep_for(
        std::min<clock::duration>(std::chrono::seconds(1), end - clock::now()));
    double secs = std::chrono::duration<double>(clock::now() - start).count();
    std::cerr << "\rbench: " << std::fixed << std::setprecision(1) << secs << "s  " << total.load()
              << " pairs  " << std::setprecision(0) << static_cast<double>(total.load()) / secs
              << "/s   " << std::flush;
  }
  stop = true;
  for (auto& th : ts) th.join();
  std::cerr << "\n";
  double secs = std::chrono::duration<double>(clock::now() - start).count();
  for (const auto& e : errors)
    if (!e.empty()) throw connection_error("bench thread failed: " + e);

  // Connections the clients made (backends that count them): made in all, and the most open at
  // once, each client's peak summed (an upper bound of the process's).
  std::optional<connection_stats> conns;
  for (const auto& c : clients)
    if (auto s = c.get_backend().connections()) {
      if (!conns) conns.emplace();
      conns->opened += s->opened;
      conns->peak += s->peak;
    }

  std::vector<double> all, handoff;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  for (auto& v : hand) handoff.insert(handoff.end(), v.begin(), v.end());
  std::uint64_t pairs = all.size();
  nlohmann::json j{{"backend", b.kind()},
                   {"mode", b.mode()},
                   {"url", url::parse(url).redacted()},
                   {"threads", a.threads},
                   {"locks", a.locks},
                   {"contended", a.contended},
                   {"one_client", a.one_client},
                   {"kind", a.shared        ? "shared"
                            : a.permits > 0 ? "permit"
                                            : "exclusive"},
                   {"permits", a.permits},
                   {"api", a.async_api ? "async" : "blocking"},
                   {"duration_s", secs},
                   {"lease_ms", lease.count()},
                   {"pairs", pairs},
                   {"pairs_per_sec", static_cast<double>(pairs) / secs},
                   {"latency_us", {{"p50", percentile(all, 0.5)}, {"p99", percentile(all, 0.99)}}}};
  if (conns) j["connections"] = {{"opened", conns->opened}, {"peak", conns->peak}};
  if (a.contended)
    j["handoff_us"] = {{"p50", percentile(handoff, 0.5)},
                       {"p99", percentile(handoff, 0.99)},
                       {"samples", handoff.size()}};
  if (a.json) {
    std::cout << j.dump() << "\n";
  } else {
    std::cout << "backend " << b.describe() << ", " << a.threads << " thread(s), " << a.locks
              << " lock(s)" << (a.one_client ? ", one client" : "")
              << (a.contended ? ", contended" : "") << (a.shared ? ", shared" : "")
              << (a.permits > 0 ? ", " + std::to_string(a.permits) + " permits" : "")
              << (a.async_api ? ", asynchronous API" : "") << "\n"
              << "pairs/s " << std::fixed << std::setprecision(0)
              << j["pairs_per_sec"].get<double>() << "  latency p50 " << std::setprecision(1)
              << j["latency_us"]["p50"].get<double>() << "us  p99 "
              << j["latency_us"]["p99"].get<double>() << "us\n";
    if (conns)
      std::cout << "connections opened " << conns->opened << "  peak " << conns->peak << "\n";
    if (a.contended)
      std::cout << "handoff p50 " << j["handoff_us"]["p50"].get<double>() << "us  p99 "
                << j["handoff_us"]["p99"].get<double>() << "us (" << handoff.size()
                << " samples)\n";
  }
  return ok;
}

}  // namespace sqlock::cli
