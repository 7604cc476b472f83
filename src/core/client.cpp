// sqlock::client and sqlock::mutex: a client's calls, and a mutex's per-thread holds and holds
// not bound to a thread, both through this client's queue of the name.
#include "sqlock/client.hpp"

#include <algorithm>
#include <mutex>
#include <thread>

#include "hold_maker.hpp"
#include "sqlock/random.hpp"

namespace sqlock {

using clock = std::chrono::steady_clock;

// ---- client ----

client::client(std::shared_ptr<backend> b, client_options opts)
    : impl_(std::make_shared<detail::client_impl>(std::move(b), std::move(opts))) {
  impl_->attach();
}

mutex client::make_lock(std::string name, lock_options opts) const {
  detail::check_options(name, opts);
  return mutex(impl_, std::move(name), opts);
}

std::vector<lock_status> client::list(std::string_view prefix) const {
  return admin_of(impl_->b(), "list locks").list(prefix);
}
bool client::force_release(std::string_view name) const {
  return force_release(name, default_actor());
}
bool client::force_release(std::string_view name, std::string_view actor) const {
  if (name.empty()) throw config_error("lock name must not be empty");
  if (actor.empty() || actor.size() > 200)
    throw config_error("the actor of a forced release must be 1-200 bytes (got " +
                       std::to_string(actor.size()) + ")");
  if (std::any_of(actor.begin(), actor.end(),
                  [](char ch) { return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f; }))
    throw config_error("the actor of a forced release must not hold control characters");
  auto& b = impl_->b();
  auto* breaker = admin_of(b, "force a release").breaker();
  if (!breaker)
    throw unsupported(b.kind() + " backend cannot release a hold regardless of its owner");
  return breaker->force_release(name, actor);
}

std::vector<lock_event> client::events(std::string_view prefix, std::size_t limit) const {
  auto& b = impl_->b();
  auto* a = b.admin();
  if (!a || !a->audit())
    throw unsupported(b.kind() + " backend keeps no audit trail of lock events");
  return a->audit()->events(prefix, limit);
}
std::vector<waiting_request> client::waiting(std::string_view prefix) const {
  auto& b = impl_->b();
  auto* a = b.admin();
  if (!a || !a->waiters())
    throw unsupported(b.kind() + " backend cannot tell which requests wait for a lock");
  return a->waiters()->waiting(prefix);
}
std::size_t client::sweep() const {
  auto* a = impl_->b().admin();
  return a ? a->sweep() : 0;
}
backend& client::get_backend() const {
  return impl_->b();
}
capabilities client::caps() const {
  return capabilities_of(impl_->b());
}

statistics client::stats() const {
  auto& s = impl_->stats;
  return statistics{s.acquisitions.load(), s.reentries.load(),        s.contended.load(),
                    s.timeouts.load(),     s.releases.load(),         s.release_errors.load(),
                    s.renewals.load(),     s.renewal_failures.load(), s.losses.load()};
}

// ---- mutex ----

namespace {
detail::lock_handle& usable(const std::shared_ptr<detail::lock_handle>& core) {
  if (!core) throw usage_error("lock handle was moved from");
  return *core;
}
}  // namespace

mutex::mutex(std::shared_ptr<detail::client_impl> c, std::string name, lock_options opts)
    : client_(std::move(c)), opts_(opts) {
  entry_ = client_->entry(name);
  core_ = std::make_shared<detail::lock_handle>(client_, entry_, false);
}

mutex::mutex(mutex&& o) noexcept
    : client_(std::move(o.client_)),
      entry_(std::move(o.entry_)),
      core_(std::move(o.core_)),
      opts_(o.opts_),
      levels_(o.levels_.exchange(0)),
      hold_id_(o.hold_id_) {}

mutex& mutex::operator=(mutex&& o) noexcept {
  if (this != &o) {
    release_all();
    client_ = std::move(o.client_);
    entry_ = std::move(o.entry_);
    core_ = std::move(o.core_);
    opts_ = o.opts_;
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
  core_->detach();  // a callback of this handle still running ends first
  // Only levels of the hold this handle took part in: never someone else's later hold.
  unsigned n = levels_.exchange(0);
  for (unsigned i = 0; i < n; ++i) unlock_level(false, hold_id_);
}

const std::string& mutex::name() const {
  return usable(core_).name();
}

void mutex::lock(std::stop_token stop) {
  lock_until(steady_time::max(), true, stop);
}

bool mutex::try_lock() {
  return lock_until(clock::now(), false, {});
}

bool mutex::try_lock_until_steady(steady_time deadline, std::stop_token stop) {
  return lock_until(deadline, true, stop);
}

hold mutex::acquire(std::stop_token stop) {
  return take_hold(steady_time::max(), true, stop);
}

hold mutex::try_acquire() {
  return take_hold(clock::now(), false, {});
}

hold mutex::try_acquire_until_steady(steady_time deadline, std::stop_token stop) {
  return take_hold(deadline, true, stop);
}

bool mutex::lock_until(steady_time deadline, bool wait, const std::stop_token& stop) {
  if (!entry_) throw usage_error("lock handle was moved from");
  auto& e = *entry_;
  auto& c = *client_;
  const auto started = c.observe.now();
  std::unique_lock lk(e.m);
  if (e.count > 0 && e.owner_thread == std::this_thread::get_id()) {
    if (e.lost) throw lock_lost("lock '" + e.name + "' was lost; reentrant acquire refused");
    ++e.count;
    ++levels_;
    hold_id_ = e.current ? e.current->id : 0;
    c.stats.reentries++;
    return true;
  }
  lk.unlock();
  if (!take_turn(deadline, wait, stop, started)) return false;
  lk.lock();
  e.count = 1;
  ++levels_;
  hold_id_ = e.current ? e.current->id : 0;
  return true;
}

hold mutex::take_hold(steady_time deadline, bool wait, const std::stop_token& stop) {
  if (!entry_) throw usage_error("lock handle was moved from");
  auto& e = *entry_;
  const auto started = client_->observe.now();
  {
    std::lock_guard g(e.m);
    if (e.count > 0 && e.owner_thread == std::this_thread::get_id())
      throw usage_error("this thread holds lock '" + e.name +
                        "' through lock(): a hold of it would wait for itself");
  }
  if (!take_turn(deadline, wait, stop, started)) return hold();
  {
    std::lock_guard g(e.m);
    e.owner_thread = {};  // the entry stays busy for the hold, which no thread owns
  }
  return detail::hold_maker::make(
      std::make_shared<detail::lock_handle>(client_, entry_, true, nullptr, entry_));
}

bool mutex::take_turn(steady_time deadline, bool wait, const std::stop_token& stop,
                      steady_time started) {
  auto& e = *entry_;
  auto& c = *client_;
  std::unique_lock lk(e.m);
  // Local-lock-first: threads of this client queue here; one talks to the backend.
  while (e.busy) {
    if (!wait) {
      c.stats.timeouts++;
      c.observe.timeout(e.name, started);
      return false;
    }
    auto free = [&] { return !e.busy; };
    bool got = deadline == steady_time::max() ? e.cv.wait(lk, stop, free)
                                              : e.cv.wait_until(lk, stop, deadline, free);
    if (!got) {
      if (stop.stop_requested()) throw detail::interrupted_error(e.name);
      c.stats.timeouts++;
      c.observe.timeout(e.name, started);
      return false;
    }
  }
  e.busy = true;
  e.owner_thread = std::this_thread::get_id();
  lk.unlock();

  bool got = false;
  try {
    lock_request req{e.name, random_token(), opts_.lease, c.opts().holder};
    req.stop = stop;
    got = c.take(entry_, req, opts_, deadline, wait, started);
  } catch (...) {
    e.leave_queue();
    throw;
  }
  if (!got) e.leave_queue();
  return got;
}

void mutex::unlock() {
  if (!entry_) return;
  {
    std::lock_guard g(entry_->m);
    if (entry_->count > 0 && entry_->owner_thread != std::this_thread::get_id())
      throw usage_error("unlock() of lock '" + entry_->name +
                        "' from a thread that does not hold it (another thread locked it; a "
                        "hold that changes threads is a sqlock::hold: mutex::acquire())");
    if (entry_->count == 0) {  // released already: like a second release, nothing to do
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
  lk.unlock();
  c.give_back(e);
  e.leave_queue();
}

bool mutex::owns_lock() const {
  if (!entry_) return false;
  std::lock_guard g(entry_->m);
  return entry_->count > 0 && entry_->owner_thread == std::this_thread::get_id();
}

std::uint64_t mutex::fence() const {
  return usable(core_).fence();
}

std::string mutex::owner() const {
  return usable(core_).owner();
}

bool mutex::lost() const {
  return core_ && core_->lost();
}

void mutex::on_lost(std::function<void(const std::string&)> cb) {
  usable(core_).on_lost(std::move(cb));
}

bool mutex::renew() {
  return usable(core_).renew();
}

std::string mutex::last_error() const {
  return core_ ? core_->last_error() : std::string();
}

}  // namespace sqlock

namespace sqlock::detail {

hold_maker::target hold_maker::of(const mutex& m) {
  if (!m.entry_) throw usage_error("lock handle was moved from");
  return {m.client_, m.entry_->name, m.opts_, {}};
}

}  // namespace sqlock::detail
