// The shared state behind sqlock::client and its lock classes: one backend, the per-name local
// entries of mutexes (the in-process queue, the reentrancy count and the current hold), the
// hold slots of every other hold, statistics, and the renewal machinery (a scheduler thread
// that watches every lease on steady_clock and a worker thread that runs the backend calls).
// What a handle does with a slot (fence, loss signal, release) is lock_handle.hpp. Internal to
// the core.
#pragma once

#include <algorithm>
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

#include "acquire.hpp"
#include "observe.hpp"
#include "orphan_releases.hpp"
#include "release_sender.hpp"
#include "sqlock/backend.hpp"
#include "sqlock/client.hpp"

namespace sqlock::detail {

class loss_callback;

/// What the backend granted for one hold, and its renewal schedule on steady_clock.
struct backend_hold {
  lease_info lease;
  milliseconds duration{};
  milliseconds renew_every{};
  bool auto_renew = true;
  bool expiry_watched = false;  // not renewed, but declared lost when the lease runs out
  steady_time valid_until{};    // conservative: request sent + lease
  steady_time next_renewal{};
  bool in_flight = false;  // a background renewal of this hold is running
  std::uint64_t id = 0;    // distinguishes holds of the same slot
};

/// When the core declares `h` lost if it was not renewed: a tenth of the lease (at most 1 s)
/// before it ends, so the holder is told before the store lets anybody else in, whatever the
/// scheduler's wake-up latency.
steady_time loss_time(const backend_hold& h);

/// The place of one backend hold at a time and its loss state: what the renewal machinery
/// watches. A mutex shares one per (client, name) (a local_entry); every shared hold, permit
/// and campaign has its own.
struct hold_slot {
  explicit hold_slot(std::string n) : name(std::move(n)) {}
  const std::string name;
  std::mutex m;
  std::optional<backend_hold> current;
  bool lost = false;  // the current/last hold was lost
  std::uint64_t next_hold_id = 1;
  /// The loss callbacks of the handles that watch this slot (lock_handle subscribes them).
  std::vector<std::shared_ptr<loss_callback>> callbacks;
  std::string last_error;
  /// The threads running on_lost callbacks now (mark_lost, without `m` held): one per loss
  /// being told (a slot taken again can lose its next hold while an earlier callback runs).
  std::vector<std::thread::id> callback_threads;
  std::condition_variable callbacks_done;
  /// Waits (with `lk` on `m`) until no on_lost callback runs, unless this thread runs one:
  /// once a handle has dropped its callback and this returned, it is not called.
  void await_callbacks(std::unique_lock<std::mutex>& lk) {
    callbacks_done.wait(lk, [&] {
      return callback_threads.empty() ||
             std::find(callback_threads.begin(), callback_threads.end(),
                       std::this_thread::get_id()) != callback_threads.end();
    });
  }
};

/// Per-(client, name) state shared by every mutex handle of that name: the local queue that
/// lets one thread at a time talk to the backend, the reentrancy count and the current hold.
struct local_entry : hold_slot {
  using hold_slot::hold_slot;
  std::condition_variable_any cv;  // waits end on a caller's stop too
  bool busy = false;               // a thread of this client holds or is acquiring
  std::thread::id owner_thread{};  // thread that holds
  unsigned count = 0;              // reentrancy depth (0 while a sqlock::hold occupies it)
  /// Lets the next thread of this client in (busy = false) and wakes it.
  void leave_queue() noexcept {
    {
      std::lock_guard g(m);
      busy = false;
      owner_thread = {};
    }
    cv.notify_one();
  }
};

/// The interrupted error of a stopped wait for lock `name`.
interrupted interrupted_error(const std::string& name);

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

  /// Asks the backend for a hold of `req` (waiting until `deadline` when `wait`) and makes it
  /// the current hold of `s`, renewed as `o` says; false when not obtained (counted as a
  /// timeout). `started` is observe.now() of the lock call. A hold not renewed is declared lost
  /// when its lease runs out if `watch_expiry`. Throws what the backend throws, and
  /// interrupted when `req.stop` ended the wait (or was requested before it began).
  bool take(const std::shared_ptr<hold_slot>& s, const lock_request& req, const lock_options& o,
            steady_time deadline, bool wait, steady_time started, bool watch_expiry = false);
  /// What take() does before asking the backend: the kind check (config_error), a stop
  /// already requested (interrupted), the observer's attempt event; with releases in the
  /// background, a wait (until `deadline`, at least one attempt's time) for this client's own
  /// release of the name still on its way.
  void prepare(const lock_request& req, steady_time deadline);
  /// What take() does when the backend's answer was lost (connection_error): releases what
  /// the request may hold in the background; throws interrupted when it was stopped.
  void failed(const lock_request& req);
  /// What take() does with the backend's answer `got` to `req` (sent at `sent`): makes it the
  /// current hold of `s`, or counts a timeout (false), or throws interrupted when stopped.
  bool adopt(const std::shared_ptr<hold_slot>& s, const lock_request& req, const lock_options& o,
             std::optional<lease_info> got, steady_time sent, steady_time started,
             bool watch_expiry);
  /// Releases the current hold of `s` on the backend, bounded by release_timeout and the
  /// lease left; a failure is counted and kept in s.last_error, never thrown. With releases in
  /// the background (backend::release_in_background()) it hands the release to the sender and
  /// returns; a failure there is counted, but no hold slot keeps it.
  void give_back(hold_slot& s) noexcept;
  /// Shortens the current hold of `s` to `left` and leaves it on the server unreleased (it
  /// ends by its lease); false when the hold was found gone or the store did not answer.
  bool leave(hold_slot& s, milliseconds left) noexcept;

  /// Wakes the renewal thread if it sleeps past `due`.
  void poke(steady_time due);

  /// Marks hold `hold_id` of `s` lost (once) and runs the on_lost callbacks without `lk` held.
  void mark_lost(hold_slot& s, std::uint64_t hold_id, std::unique_lock<std::mutex>& lk);
  /// Renews one hold now; returns false when it is lost.
  bool renew_now(hold_slot& s);

  backend& b() { return *backend_; }
  const client_options& opts() const { return opts_; }

  counters stats;
  observe_point observe;  ///< the client's observer (no-op when none)

 private:
  void renewal_loop();
  void worker_loop();
  void start_worker();
  // Renews the current holds of `slots` in one backend call (renew_all) and schedules each one's
  // next renewal.
  void renew_in_background(const std::vector<std::shared_ptr<hold_slot>>& slots);
  // The renewal of `h` that renew_all() is asked for: by the end of its lease.
  renewal renewal_of(const backend_hold& h) const;
  // Records what renewing `h` of `s` found: the lease extended, the hold lost, or a failure to
  // try again within the lease. False when the hold is lost.
  bool renewed(hold_slot& s, const backend_hold& h, const renewal& r);
  void backend_lost(const std::string& name, const std::string& owner);
  // Releases `h` of lock `name` on the backend by `cap` at the latest (and by release_timeout
  // and the lease left); a release without an answer goes to the orphan releases. Empty when
  // released (or found gone), else what failed.
  std::optional<std::string> release_now(const std::string& name, const backend_hold& h,
                                         steady_time cap) noexcept;
  // Adds a hold to the renewal set; wakes the renewal thread only when this hold is due before
  // the time it is sleeping until (keeps the thread out of the acquire hot path).
  void watch(const std::shared_ptr<hold_slot>& s, const std::string& owner, steady_time due);
  // Removes a hold from the renewal set.
  void unwatch(hold_slot* s, const std::string& owner);

  std::shared_ptr<backend> backend_;
  client_options opts_;
  std::uint64_t listener_ = 0;  // loss listener id on the backend (0 = none)
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false;
  steady_time wake_at_ = steady_time::min();  // when the sleeping renewal thread wakes up
  std::map<std::string, std::weak_ptr<local_entry>> entries_;
  std::map<hold_slot*, std::shared_ptr<hold_slot>> renewing_;
  std::map<std::string, std::weak_ptr<hold_slot>> owners_;  // held owner token -> its slot
  std::uint64_t gc_counter_ = 0;
  std::thread renewer_;
  std::mutex work_m_;
  std::condition_variable work_cv_;
  std::deque<std::shared_ptr<hold_slot>> work_;  // renewals to run; null = sweep
  bool work_stop_ = false;
  std::thread worker_;  // started by the renewer at its first hand-over, under work_m_
  std::unique_ptr<orphan_releases> orphans_;  // destroyed late: its thread calls the backend
  // Releases that do not wait (backend::release_in_background()), else null. Destroyed first:
  // it flushes what is pending through the backend and the orphan releases.
  std::unique_ptr<release_sender> releases_;
};

}  // namespace sqlock::detail
