#include "sqlock/client.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "sqlock/random.hpp"

namespace sqlock {

using clock = std::chrono::steady_clock;

namespace detail {

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

class client_impl {
 public:
  client_impl(std::shared_ptr<backend> b, client_options o)
      : backend_(std::move(b)), opts_(std::move(o)) {
    if (!backend_) throw config_error("client needs a backend");
    if (opts_.holder.empty()) opts_.holder = default_holder();
    if (opts_.waiting.initial.count() <= 0 || opts_.waiting.cap.count() <= 0 ||
        opts_.waiting.notify_recheck.count() <= 0)
      throw config_error("wait policy durations must be > 0");
    renewer_ = std::thread([this] { renewal_loop(); });
    worker_ = std::thread([this] { worker_loop(); });
  }
  ~client_impl() {
    {
      std::lock_guard g(m_);
      stop_ = true;
    }
    cv_.notify_all();
    {
      std::lock_guard g(work_m_);
      work_stop_ = true;
    }
    work_cv_.notify_all();
    renewer_.join();
    worker_.join();  // waits for a backend call in progress to return (backends time out)
  }

  std::shared_ptr<local_entry> entry(const std::string& name) {
    std::lock_guard g(m_);
    auto& w = entries_[name];
    if (auto e = w.lock()) return e;
    auto e = std::make_shared<local_entry>(name);
    w = e;
    if (entries_.size() > 1024 && ++gc_counter_ % 1024 == 0) {
      std::erase_if(entries_, [](const auto& kv) { return kv.second.expired(); });
    }
    return e;
  }

  // Adds a hold to the renewal set; wakes the renewal thread only when this hold is due before
  // the time it is sleeping until (keeps the thread out of the acquire hot path).
  void watch(const std::shared_ptr<local_entry>& e, steady_time due) {
    {
      std::lock_guard g(m_);
      renewing_[e.get()] = e;
    }
    poke(due);
  }
  // Wakes the renewal thread if it sleeps past `due`.
  void poke(steady_time due) {
    bool wake = false;
    {
      std::lock_guard g(m_);
      wake = due < wake_at_;
    }
    if (wake) cv_.notify_all();
  }
  void unwatch(local_entry* e) {
    std::lock_guard g(m_);
    renewing_.erase(e);
  }

  backend& b() { return *backend_; }
  const client_options& opts() const { return opts_; }

  struct counters {
    std::atomic<std::uint64_t> acquisitions{0}, reentries{0}, contended{0}, timeouts{0},
        releases{0}, release_errors{0}, renewals{0}, renewal_failures{0}, losses{0};
  } stats;

  void mark_lost(local_entry& e, std::uint64_t hold_id, std::unique_lock<std::mutex>& lk) {
    if (!e.current || e.current->id != hold_id || e.lost) return;
    e.lost = true;
    stats.losses++;
    auto callbacks = e.on_lost;
    lk.unlock();
    unwatch(&e);
    for (auto& [id, cb] : callbacks) {
      try {
        cb(e.name);
      } catch (...) {
        // A callback's failure must not stop the renewal thread.
      }
    }
    lk.lock();
  }

  /// Renews one hold now; returns false when it is lost.
  bool renew_now(local_entry& e) {
    std::unique_lock lk(e.m);
    if (!e.current) throw usage_error("renew() on lock '" + e.name + "' that is not held");
    if (e.lost) return false;
    hold h = *e.current;
    lk.unlock();
    auto sent = clock::now();
    bool ok = false;
    try {
      ok = backend_->renew(h.lease, h.duration);
    } catch (const error& ex) {
      stats.renewal_failures++;
      lk.lock();
      e.last_error = ex.what();
      if (e.current && e.current->id == h.id) {
        if (clock::now() >= e.current->valid_until) {
          mark_lost(e, h.id, lk);
          return false;
        }
        // Outcome unknown: try again soon, before the lease runs out.
        auto left = e.current->valid_until - clock::now();
        auto retry = clock::now() + std::min<clock::duration>(left / 4, std::chrono::seconds(1));
        e.current->next_renewal = retry;
        lk.unlock();  // lock order: client mutex before entry mutex
        poke(retry);
        return true;
      }
      return !e.lost;
    }
    lk.lock();
    if (!e.current || e.current->id != h.id) return true;  // released meanwhile
    if (!ok) {
      mark_lost(e, h.id, lk);
      return false;
    }
    stats.renewals++;
    e.current->valid_until = sent + h.duration;
    e.current->next_renewal = sent + h.renew_every;
    return true;
  }

 private:
  // The scheduler: hands due renewals to the worker and watches every hold's lease on
  // steady_clock. It never calls the backend itself, so a backend call that hangs (a
  // blackholed connection) cannot delay the loss signal: a hold whose renewal is still in
  // flight when its lease runs out is reported lost on time.
  void renewal_loop() {
    std::unique_lock lk(m_);
    auto next_sweep =
        opts_.sweep_every.count() > 0 ? clock::now() + opts_.sweep_every : steady_time::max();
    while (!stop_) {
      // Find the earliest renewal due and the holds whose lease ran out mid-renewal.
      steady_time next = next_sweep;
      std::vector<std::shared_ptr<local_entry>> due;
      std::vector<std::pair<std::shared_ptr<local_entry>, std::uint64_t>> expired;
      auto now = clock::now();
      for (auto& [ptr, e] : renewing_) {
        std::lock_guard eg(e->m);
        if (!e->current || !e->current->auto_renew || e->lost) continue;
        if (e->current->in_flight) {
          if (e->current->valid_until <= now)
            expired.emplace_back(e, e->current->id);
          else
            next = std::min(next, e->current->valid_until);
        } else if (e->current->next_renewal <= now) {
          e->current->in_flight = true;
          due.push_back(e);
        } else {
          next = std::min(next, e->current->next_renewal);
        }
      }
      if (due.empty() && expired.empty() && now < next_sweep) {
        wake_at_ = next;
        if (next == steady_time::max())
          cv_.wait(lk);
        else
          cv_.wait_until(lk, next);
        wake_at_ = steady_time::min();  // awake: it rescans before sleeping again
        continue;
      }
      lk.unlock();
      for (auto& [e, id] : expired) {
        std::unique_lock el(e->m);
        mark_lost(*e, id, el);
      }
      bool sweep = clock::now() >= next_sweep;
      if (sweep) next_sweep = clock::now() + opts_.sweep_every;
      if (!due.empty() || sweep) {
        {
          std::lock_guard g(work_m_);
          for (auto& e : due) work_.push_back(e);
          if (sweep) work_.push_back(nullptr);  // null = a sweep
        }
        work_cv_.notify_one();
      }
      lk.lock();
    }
  }

  // Runs renewals (and sweeps) one at a time, off the scheduler thread.
  void worker_loop() {
    std::unique_lock lk(work_m_);
    for (;;) {
      work_cv_.wait(lk, [&] { return work_stop_ || !work_.empty(); });
      if (work_stop_) return;
      auto e = std::move(work_.front());
      work_.pop_front();
      lk.unlock();
      if (e) {
        renew_in_background(*e);
      } else {
        try {
          backend_->sweep();
        } catch (...) {
          // Sweeping is best effort; the next round tries again.
        }
      }
      lk.lock();
    }
  }

  void renew_in_background(local_entry& e) {
    std::uint64_t id = 0;
    {
      std::lock_guard g(e.m);
      if (!e.current) return;
      id = e.current->id;
    }
    try {
      renew_now(e);
    } catch (...) {
      // Released meanwhile (usage_error) or a failure renew_now already recorded.
    }
    steady_time next{};
    {
      std::lock_guard g(e.m);
      if (!e.current || e.current->id != id) return;
      e.current->in_flight = false;
      next = e.current->next_renewal;
    }
    poke(next);
  }

  std::shared_ptr<backend> backend_;
  client_options opts_;
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

}  // namespace detail

namespace {
std::atomic<std::uint64_t> next_handle_id{1};

void check_options(const std::string& name, const lock_options& o) {
  if (name.empty()) throw config_error("lock name must not be empty");
  if (o.lease.count() <= 0)
    throw config_error("lease of lock '" + name + "' must be > 0 (got " +
                       std::to_string(o.lease.count()) + "ms)");
  if (o.renew_every.count() < 0)
    throw config_error("renew_every of lock '" + name + "' must be >= 0");
  if (o.renew_every.count() > 0 && o.renew_every >= o.lease)
    throw config_error("renew_every of lock '" + name + "' must be shorter than the lease");
}
}  // namespace

// ---- client ----

client::client(std::shared_ptr<backend> b, client_options opts)
    : impl_(std::make_shared<detail::client_impl>(std::move(b), std::move(opts))) {}

mutex client::make_lock(std::string name, lock_options opts) const {
  check_options(name, opts);
  return mutex(impl_, std::move(name), opts);
}

std::vector<lock_status> client::list(std::string_view prefix) const {
  return impl_->b().list(prefix);
}
bool client::force_release(std::string_view name) const {
  if (name.empty()) throw config_error("lock name must not be empty");
  return impl_->b().force_release(name);
}
std::size_t client::sweep() const {
  return impl_->b().sweep();
}
backend& client::get_backend() const {
  return impl_->b();
}
capabilities client::caps() const {
  return impl_->b().caps();
}

statistics client::stats() const {
  auto& s = impl_->stats;
  return statistics{s.acquisitions.load(), s.reentries.load(),        s.contended.load(),
                    s.timeouts.load(),     s.releases.load(),         s.release_errors.load(),
                    s.renewals.load(),     s.renewal_failures.load(), s.losses.load()};
}

// ---- mutex ----

mutex::mutex(std::shared_ptr<detail::client_impl> c, std::string name, lock_options opts)
    : client_(std::move(c)), opts_(opts) {
  entry_ = client_->entry(name);
  id_ = next_handle_id++;
}

mutex::mutex(mutex&& o) noexcept
    : client_(std::move(o.client_)),
      entry_(std::move(o.entry_)),
      opts_(o.opts_),
      id_(o.id_),
      levels_(o.levels_.exchange(0)),
      hold_id_(o.hold_id_) {}

mutex& mutex::operator=(mutex&& o) noexcept {
  if (this != &o) {
    release_all();
    client_ = std::move(o.client_);
    entry_ = std::move(o.entry_);
    opts_ = o.opts_;
    id_ = o.id_;
    levels_ = o.levels_.exchange(0);
    hold_id_ = o.hold_id_;
  }
  return *this;
}

mutex::~mutex() {
  release_all();
}

void mutex::release_all() noexcept {
  if (!entry_) return;
  {
    std::lock_guard g(entry_->m);
    std::erase_if(entry_->on_lost, [&](const auto& p) { return p.first == id_; });
  }
  // Only levels of the hold this handle took part in: never someone else's later hold.
  unsigned n = levels_.exchange(0);
  for (unsigned i = 0; i < n; ++i) unlock_level(false, hold_id_);
}

const std::string& mutex::name() const {
  return entry_->name;
}

void mutex::lock() {
  acquire(steady_time::max(), true);
}

bool mutex::try_lock() {
  return acquire(clock::now(), false);
}

bool mutex::try_lock_until_steady(steady_time deadline) {
  return acquire(deadline, true);
}

bool mutex::acquire(steady_time deadline, bool wait) {
  if (!entry_) throw usage_error("lock handle was moved from");
  auto& e = *entry_;
  auto& c = *client_;
  const auto me = std::this_thread::get_id();
  std::unique_lock lk(e.m);
  if (e.count > 0 && e.owner_thread == me) {
    if (e.lost) throw lock_lost("lock '" + e.name + "' was lost; reentrant acquire refused");
    ++e.count;
    ++levels_;
    hold_id_ = e.current ? e.current->id : 0;
    c.stats.reentries++;
    return true;
  }
  // Local-lock-first: threads of this client queue here; one talks to the backend.
  while (e.busy) {
    if (!wait) {
      c.stats.timeouts++;
      return false;
    }
    if (deadline == steady_time::max()) {
      e.cv.wait(lk);
    } else if (e.cv.wait_until(lk, deadline) == std::cv_status::timeout && e.busy) {
      c.stats.timeouts++;
      return false;
    }
  }
  e.busy = true;
  e.owner_thread = me;
  lk.unlock();

  lock_request req{e.name, random_token(), opts_.lease, c.opts().holder};
  auto sent = clock::now();
  std::optional<lease_info> got;
  bool contended = false;
  try {
    // One call: acquire() makes its first attempt at once, so a busy lock costs no extra
    // round trip (and no extra queue node on ZooKeeper) before the wait begins.
    got = wait ? c.b().acquire(req, deadline, c.opts().waiting) : c.b().try_acquire(req);
    contended = got && got->waited;
  } catch (...) {
    lk.lock();
    e.busy = false;
    e.owner_thread = {};
    lk.unlock();
    e.cv.notify_one();
    throw;
  }
  lk.lock();
  if (!got) {
    e.busy = false;
    e.owner_thread = {};
    lk.unlock();
    e.cv.notify_one();
    c.stats.timeouts++;
    return false;
  }
  if (contended) sent = clock::now();  // conservative start of the lease
  detail::hold h;
  h.lease = std::move(*got);
  h.duration = opts_.lease;
  h.renew_every = opts_.renew_every.count() > 0 ? opts_.renew_every : opts_.lease / 3;
  if (h.renew_every.count() <= 0) h.renew_every = milliseconds(1);
  h.auto_renew = opts_.auto_renew;
  h.valid_until = sent + opts_.lease;
  h.next_renewal = sent + h.renew_every;
  h.id = e.next_hold_id++;
  e.current = std::move(h);
  e.count = 1;
  e.lost = false;
  ++levels_;
  hold_id_ = e.current->id;
  c.stats.acquisitions++;
  if (contended) c.stats.contended++;
  bool renew = opts_.auto_renew;
  auto due = e.current->next_renewal;
  lk.unlock();
  if (renew) c.watch(entry_, due);
  return true;
}

void mutex::unlock() noexcept {
  if (!entry_) return;
  {
    std::lock_guard g(entry_->m);
    if (entry_->count == 0 || entry_->owner_thread != std::this_thread::get_id()) {
      entry_->last_error = "unlock() of lock '" + entry_->name + "' not held by this thread";
      return;
    }
  }
  if (levels_ > 0) --levels_;
  unlock_level(true);
}

void mutex::unlock_level(bool check_thread, std::uint64_t expect_hold) noexcept {
  auto& e = *entry_;
  auto& c = *client_;
  std::unique_lock lk(e.m);
  if (e.count == 0) return;
  if (expect_hold != 0 && (!e.current || e.current->id != expect_hold)) return;
  if (check_thread && e.owner_thread != std::this_thread::get_id()) return;
  if (--e.count > 0) return;
  std::optional<detail::hold> h = std::move(e.current);
  e.current.reset();
  lk.unlock();
  c.unwatch(&e);
  if (h) {
    try {
      c.b().release(h->lease);
      c.stats.releases++;
    } catch (const std::exception& ex) {
      c.stats.release_errors++;
      std::lock_guard g(e.m);
      e.last_error = std::string("release of lock '") + e.name + "' failed: " + ex.what();
    } catch (...) {
      c.stats.release_errors++;
    }
  }
  lk.lock();
  e.busy = false;
  e.owner_thread = {};
  lk.unlock();
  e.cv.notify_one();
}

bool mutex::owns_lock() const {
  if (!entry_) return false;
  std::lock_guard g(entry_->m);
  return entry_->count > 0 && entry_->owner_thread == std::this_thread::get_id();
}

std::uint64_t mutex::fence() const {
  if (!entry_) throw usage_error("lock handle was moved from");
  std::lock_guard g(entry_->m);
  if (!entry_->current) throw usage_error("fence() of lock '" + entry_->name + "' not held");
  if (!client_->b().caps().fencing)
    throw unsupported(client_->b().kind() + " backend gives no fencing tokens");
  return entry_->current->lease.fence;
}

std::string mutex::owner() const {
  if (!entry_) throw usage_error("lock handle was moved from");
  std::lock_guard g(entry_->m);
  if (!entry_->current) throw usage_error("owner() of lock '" + entry_->name + "' not held");
  return entry_->current->lease.owner;
}

bool mutex::lost() const {
  if (!entry_) return false;
  std::lock_guard g(entry_->m);
  return entry_->lost;
}

void mutex::on_lost(std::function<void(const std::string&)> cb) {
  if (!entry_) throw usage_error("lock handle was moved from");
  std::lock_guard g(entry_->m);
  std::erase_if(entry_->on_lost, [&](const auto& p) { return p.first == id_; });
  if (cb) entry_->on_lost.emplace_back(id_, std::move(cb));
}

bool mutex::renew() {
  if (!entry_) throw usage_error("lock handle was moved from");
  return client_->renew_now(*entry_);
}

std::string mutex::last_error() const {
  if (!entry_) return {};
  std::lock_guard g(entry_->m);
  return entry_->last_error;
}

}  // namespace sqlock
