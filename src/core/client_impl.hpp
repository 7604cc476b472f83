// The shared state behind sqlock::client and sqlock::mutex: one backend, the per-name local
// entries (the in-process queue, the reentrancy count and the current hold), statistics, and
// the renewal machinery (a scheduler thread that watches every lease on steady_clock and a
// worker thread that runs the backend calls). Internal to the core.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "observe.hpp"
#include "sqlock/client.hpp"

namespace sqlock::detail {

/// One hold obtained from the backend.
struct hold {
  lease_info lease;
  milliseconds duration{};
  milliseconds renew_every{};
  bool auto_renew = true;
  steady_time valid_until{};  // conservative: request sent + lease
  steady_time next_renewal{};
  bool in_flight = false;  // a background renewal of this hold is running
  std::uint64_t id = 0;    // distinguishes holds of the same entry
};

/// Per-(client, name) state shared by every handle of that name: the local queue that lets one
/// thread at a time talk to the backend, the reentrancy count and the current hold.
struct local_entry {
  explicit local_entry(std::string n) : name(std::move(n)) {}
  const std::string name;
  std::mutex m;
  std::condition_variable cv;
  bool busy = false;               // a thread of this client holds or is acquiring
  std::thread::id owner_thread{};  // thread that holds
  unsigned count = 0;              // reentrancy depth
  std::optional<hold> current;
  bool lost = false;  // the current/last hold was lost
  std::uint64_t next_hold_id = 1;
  std::vector<std::pair<std::uint64_t, std::function<void(const std::string&)>>> on_lost;
  std::string last_error;
};

/// Counters behind client::stats().
struct counters {
  std::atomic<std::uint64_t> acquisitions{0}, reentries{0}, contended{0}, timeouts{0}, releases{0},
      release_errors{0}, renewals{0}, renewal_failures{0}, losses{0};
};

class client_impl : public std::enable_shared_from_this<client_impl> {
 public:
  client_impl(std::shared_ptr<backend> b, client_options o);
  ~client_impl();
  client_impl(const client_impl&) = delete;
  client_impl& operator=(const client_impl&) = delete;

  /// Subscribes to the backend's loss reports (needs shared_from_this: call after make_shared).
  void attach();

  /// The entry of `name`, shared by every handle of this client.
  std::shared_ptr<local_entry> entry(const std::string& name);

  /// Adds a hold to the renewal set; wakes the renewal thread only when this hold is due before
  /// the time it is sleeping until (keeps the thread out of the acquire hot path).
  void watch(const std::shared_ptr<local_entry>& e, steady_time due);
  /// Wakes the renewal thread if it sleeps past `due`.
  void poke(steady_time due);
  /// Removes a hold from the renewal set.
  void unwatch(local_entry* e);

  /// Marks hold `hold_id` of `e` lost (once) and runs the on_lost callbacks without `lk` held.
  void mark_lost(local_entry& e, std::uint64_t hold_id, std::unique_lock<std::mutex>& lk);
  /// Renews one hold now; returns false when it is lost.
  bool renew_now(local_entry& e);

  backend& b() { return *backend_; }
  const client_options& opts() const { return opts_; }

  counters stats;
  observe_point observe;  ///< the client's observer (no-op when none)

 private:
  void renewal_loop();
  void worker_loop();
  void renew_in_background(local_entry& e);
  void backend_lost(const std::string& name, const std::string& owner);

  std::shared_ptr<backend> backend_;
  client_options opts_;
  std::uint64_t listener_ = 0;  // loss listener id on the backend (0 = none)
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false;
  steady_time wake_at_ = steady_time::min();  // when the sleeping renewal thread wakes up
  std::map<std::string, std::weak_ptr<local_entry>> entries_;
  std::map<local_entry*, std::shared_ptr<local_entry>> renewing_;
  std::uint64_t gc_counter_ = 0;
  std::thread renewer_;
  std::mutex work_m_;
  std::condition_variable work_cv_;
  std::deque<std::shared_ptr<local_entry>> work_;  // renewals to run; null = sweep
  bool work_stop_ = false;
  std::thread worker_;
};

}  // namespace sqlock::detail
