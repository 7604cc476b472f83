#include "sqlock/client.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <thread>

#include "hold_maker.hpp"
#include "sqlock/random.hpp"

namespace sqlock {

using clock = std::chrono::steady_clock;

namespace {
std::atomic<std::uint64_t> next_handle_id{1};

}  // namespace

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
  if (name.empty()) throw config_error("lock name must not be empty");
  return admin_of(impl_->b(), "force a release").force_release(name);
}

std::vector<lock_event> client::events(std::string_view prefix, std::size_t limit) const {
  auto& b = impl_->b();
  if (!b.caps().events || !b.admin())
    throw unsupported(b.kind() + " backend keeps no audit trail of lock events");
  return b.admin()->events(prefix, limit);
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
    std::unique_lock lk(entry_->m);
    std::erase_if(entry_->on_lost, [&](const auto& p) { return p.first == id_; });
    entry_->await_callbacks(lk);  // a callback of this handle still running ends first
  }
  // Only levels of the hold this handle took part in: never someone else's later hold.
  unsigned n = levels_.exchange(0);
  for (unsigned i = 0; i < n; ++i) unlock_level(false, hold_id_);
}

const std::string& mutex::name() const {
  return entry_->name;
}

void mutex::lock(std::stop_token stop) {
  acquire(steady_time::max(), true, stop);
}

bool mutex::try_lock() {
  return acquire(clock::now(), false, {});
}

bool mutex::try_lock_until_steady(steady_time deadline, std::stop_token stop) {
  return acquire(deadline, true, stop);
}

bool mutex::acquire(steady_time deadline, bool wait, const std::stop_token& stop) {
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
  e.owner_thread = me;
  lk.unlock();

  bool got = false;
  try {
    lock_request req{e.name, random_token(), opts_.lease, c.opts().holder};
    req.stop = stop;
    got = c.take(entry_, req, opts_, deadline, wait, started);
  } catch (...) {
    free_queue();
    throw;
  }
  if (!got) {
    free_queue();
    return false;
  }
  lk.lock();
  e.count = 1;
  ++levels_;
  hold_id_ = e.current ? e.current->id : 0;
  return true;
}

void mutex::free_queue() noexcept {
  {
    std::lock_guard g(entry_->m);
    entry_->busy = false;
    entry_->owner_thread = {};
  }
  entry_->cv.notify_one();
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
  lk.unlock();
  c.give_back(e);
  free_queue();
}

bool mutex::owns_lock() const {
  if (!entry_) return false;
  std::lock_guard g(entry_->m);
  return entry_->count > 0 && entry_->owner_thread == std::this_thread::get_id();
}

std::uint64_t mutex::fence() const {
  if (!entry_) throw usage_error("lock handle was moved from");
  return client_->fence_of(*entry_);
}

std::string mutex::owner() const {
  if (!entry_) throw usage_error("lock handle was moved from");
  std::lock_guard g(entry_->m);
  if (!entry_->current) throw usage_error("owner() of lock '" + entry_->name + "' not held");
  return entry_->current->lease.owner;
}

bool mutex::lost() const {
  if (!entry_) return false;
  std::unique_lock lk(entry_->m);
  if (entry_->lost) entry_->await_callbacks(lk);  // true once the loss's callbacks returned
  return entry_->lost;
}

void mutex::on_lost(std::function<void(const std::string&)> cb) {
  if (!entry_) throw usage_error("lock handle was moved from");
  std::unique_lock lk(entry_->m);
  std::erase_if(entry_->on_lost, [&](const auto& p) { return p.first == id_; });
  entry_->await_callbacks(lk);  // the callback replaced is not called after this returns
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
