#include "sqlock/client.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <thread>

#include "client_impl.hpp"
#include "sqlock/random.hpp"

namespace sqlock {

using clock = std::chrono::steady_clock;

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
    : impl_(std::make_shared<detail::client_impl>(std::move(b), std::move(opts))) {
  impl_->attach();
}

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

std::vector<lock_event> client::events(std::string_view prefix, std::size_t limit) const {
  return impl_->b().events(prefix, limit);
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
  const auto started = c.observe.now();
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
      c.observe.timeout(e.name, started);
      return false;
    }
    if (deadline == steady_time::max()) {
      e.cv.wait(lk);
    } else if (e.cv.wait_until(lk, deadline) == std::cv_status::timeout && e.busy) {
      c.stats.timeouts++;
      c.observe.timeout(e.name, started);
      return false;
    }
  }
  e.busy = true;
  e.owner_thread = me;
  lk.unlock();

  lock_request req{e.name, random_token(), opts_.lease, c.opts().holder};
  require_kind(c.b(), req);
  auto sent = clock::now();
  std::optional<lease_info> got;
  bool contended = false;
  c.observe.attempt(e.name);
  try {
    // One call: acquire() makes its first attempt at once, so a busy lock costs no extra
    // round trip (and no extra queue node on ZooKeeper) before the wait begins.
    got = wait ? c.b().acquire(req, deadline, c.opts().waiting)
               : c.b().try_acquire(req, sent + c.opts().waiting.min_attempt, nullptr);
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
    c.observe.timeout(e.name, started);
    return false;
  }
  // The lease runs from when the winning request was sent, on steady_clock.
  if (got->sent != steady_time{}) sent = got->sent;
  detail::hold h;
  h.lease = std::move(*got);
  h.lease.sent = sent;  // when this hold began (the observer's hold time)
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
  c.observe.acquired(e.name, started, contended, e.current->lease.fence);
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
      // Bounded: after the lease ends the store frees the lock anyway.
      auto now = clock::now();
      auto left = std::max<clock::duration>(h->valid_until - now, c.opts().waiting.min_attempt);
      c.b().release(h->lease, now + std::min<clock::duration>(left, c.opts().release_timeout));
      c.stats.releases++;
      c.observe.released(e.name, h->lease.fence, h->lease.sent);
    } catch (const std::exception& ex) {
      c.stats.release_errors++;
      c.observe.release_failed(e.name, h->lease.fence, h->lease.sent, ex.what());
      std::lock_guard g(e.m);
      e.last_error = std::string("release of lock '") + e.name + "' failed: " + ex.what();
    } catch (...) {
      c.stats.release_errors++;
      c.observe.release_failed(e.name, h->lease.fence, h->lease.sent, "unknown error");
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
