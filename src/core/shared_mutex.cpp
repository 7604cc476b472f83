// sqlock::shared_mutex: one hold per thread, shared or exclusive, each a hold of its own
// (hold.cpp) with its own lease and renewal; the handle's one loss callback is shared by all
// of them (lock_handle.hpp).
#include "sqlock/shared_mutex.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <thread>

#include "hold_maker.hpp"

namespace sqlock {

struct shared_mutex::state {
  std::shared_ptr<detail::client_impl> c;
  std::string name;
  lock_options opts;
  std::mutex m;
  struct per_thread {
    hold h;  // kept after release: lost() and last_error() of the last hold still answer
    lock_kind kind = lock_kind::shared;
  };
  std::map<std::thread::id, per_thread> threads;
  std::shared_ptr<detail::loss_callback> on_lost = std::make_shared<detail::loss_callback>();
  std::string last_error;
};

shared_mutex client::make_shared_mutex(std::string name, lock_options opts) const {
  detail::check_options(name, opts);
  auto s = std::make_shared<shared_mutex::state>();
  s->c = impl_;
  s->name = std::move(name);
  s->opts = opts;
  return shared_mutex(std::move(s));
}

shared_mutex::shared_mutex(std::shared_ptr<state> s) : st_(std::move(s)) {}
shared_mutex::shared_mutex(shared_mutex&&) noexcept = default;

shared_mutex& shared_mutex::operator=(shared_mutex&& o) noexcept {
  if (this != &o) {
    shared_mutex old(std::move(*this));
    st_ = std::move(o.st_);
  }
  return *this;
}

shared_mutex::~shared_mutex() {
  if (!st_) return;
  st_->on_lost->set(nullptr);  // a callback running ends first
  std::map<std::thread::id, state::per_thread> all;
  {
    std::lock_guard g(st_->m);
    all.swap(st_->threads);
  }
  // The holds release as `all` goes.
}

void shared_mutex::lock(std::stop_token stop) {
  acquire(lock_kind::exclusive, steady_time::max(), true, stop);
}
bool shared_mutex::try_lock() {
  return acquire(lock_kind::exclusive, std::chrono::steady_clock::now(), false, {});
}
bool shared_mutex::try_lock_until_steady(steady_time deadline, std::stop_token stop) {
  return acquire(lock_kind::exclusive, deadline, true, stop);
}
void shared_mutex::unlock() {
  drop(lock_kind::exclusive);
}
void shared_mutex::lock_shared(std::stop_token stop) {
  acquire(lock_kind::shared, steady_time::max(), true, stop);
}
bool shared_mutex::try_lock_shared() {
  return acquire(lock_kind::shared, std::chrono::steady_clock::now(), false, {});
}
bool shared_mutex::try_lock_shared_until_steady(steady_time deadline, std::stop_token stop) {
  return acquire(lock_kind::shared, deadline, true, stop);
}
void shared_mutex::unlock_shared() {
  drop(lock_kind::shared);
}

hold shared_mutex::acquire(std::stop_token stop) {
  return take(lock_kind::exclusive, steady_time::max(), true, stop);
}
hold shared_mutex::try_acquire() {
  return take(lock_kind::exclusive, std::chrono::steady_clock::now(), false, {});
}
hold shared_mutex::try_acquire_until_steady(steady_time deadline, std::stop_token stop) {
  return take(lock_kind::exclusive, deadline, true, stop);
}
hold shared_mutex::acquire_shared(std::stop_token stop) {
  return take(lock_kind::shared, steady_time::max(), true, stop);
}
hold shared_mutex::try_acquire_shared() {
  return take(lock_kind::shared, std::chrono::steady_clock::now(), false, {});
}
hold shared_mutex::try_acquire_shared_until_steady(steady_time deadline, std::stop_token stop) {
  return take(lock_kind::shared, deadline, true, stop);
}

namespace {
// Both kinds of a shared_mutex need a backend with shared locks.
void require_shared(const shared_mutex::state& st) {
  lock_request shared;
  shared.kind = lock_kind::shared;
  require_kind(st.c->b(), shared);
}
}  // namespace

hold shared_mutex::take(lock_kind kind, steady_time deadline, bool wait,
                        const std::stop_token& stop) {
  if (!st_) throw usage_error("shared_mutex handle was moved from");
  require_shared(*st_);
  return detail::hold_maker::take(st_->c, st_->name, st_->opts, {.kind = kind, .stop = stop},
                                  deadline, wait);
}

bool shared_mutex::acquire(lock_kind kind, steady_time deadline, bool wait,
                           const std::stop_token& stop) {
  if (!st_) throw usage_error("shared_mutex handle was moved from");
  auto& st = *st_;
  require_shared(st);
  const auto me = std::this_thread::get_id();
  {
    std::lock_guard g(st.m);
    auto it = st.threads.find(me);
    if (it != st.threads.end() && it->second.h)
      throw usage_error("this thread already holds shared_mutex '" + st.name +
                        "' (it is not reentrant)");
  }
  hold h = detail::hold_maker::take(
      st.c, st.name, st.opts, {.kind = kind, .stop = stop, .on_lost = st.on_lost}, deadline, wait);
  if (!h) return false;
  std::lock_guard g(st.m);
  st.threads[me] = {std::move(h), kind};
  return true;
}

void shared_mutex::drop(lock_kind kind) {
  if (!st_) return;
  auto& st = *st_;
  const auto me = std::this_thread::get_id();
  const char* what = kind == lock_kind::shared ? "unlock_shared()" : "unlock()";
  hold h;
  {
    std::lock_guard g(st.m);
    auto it = st.threads.find(me);
    const bool mine = it != st.threads.end() && it->second.h;
    if (!mine && std::any_of(st.threads.begin(), st.threads.end(),
                             [&](const auto& t) { return t.first != me && t.second.h; }))
      throw usage_error(std::string(what) + " of shared_mutex '" + st.name +
                        "' from a thread that does not hold it (another thread locked it; a hold "
                        "that changes threads is a sqlock::hold: shared_mutex::acquire())");
    if (!mine || it->second.kind != kind) {
      st.last_error =
          std::string(what) + " of shared_mutex '" + st.name + "' not held that way by this thread";
      return;
    }
    h = std::move(it->second.h);
  }
  h.release();
  std::lock_guard g(st.m);
  if (auto e = h.last_error(); !e.empty()) st.last_error = e;
  auto& slot = st.threads[std::this_thread::get_id()];
  if (!slot.h) slot.h = std::move(h);  // released: kept for lost()
}

namespace {
// The calling thread's entry in `st` (null when it never held); call with st.m locked.
const shared_mutex::state::per_thread* mine(const shared_mutex::state& st) {
  auto it = st.threads.find(std::this_thread::get_id());
  return it == st.threads.end() ? nullptr : &it->second;
}
// The calling thread's hold in `st`; usage_error naming `what` when it holds nothing.
const hold& held_by_me(const shared_mutex::state& st, const char* what) {
  auto* p = mine(st);
  if (!p || !p->h)
    throw usage_error(std::string(what) + " of shared_mutex '" + st.name +
                      "' not held by this thread");
  return p->h;
}
}  // namespace

bool shared_mutex::owns_lock() const {
  if (!st_) return false;
  std::lock_guard g(st_->m);
  auto* p = mine(*st_);
  return p && p->h && p->kind == lock_kind::exclusive;
}

bool shared_mutex::owns_shared() const {
  if (!st_) return false;
  std::lock_guard g(st_->m);
  auto* p = mine(*st_);
  return p && p->h && p->kind == lock_kind::shared;
}

std::uint64_t shared_mutex::fence() const {
  if (!st_) throw usage_error("shared_mutex handle was moved from");
  std::lock_guard g(st_->m);
  return held_by_me(*st_, "fence()").fence();
}

std::string shared_mutex::owner() const {
  if (!st_) throw usage_error("shared_mutex handle was moved from");
  std::lock_guard g(st_->m);
  return held_by_me(*st_, "owner()").owner();
}

bool shared_mutex::lost() const {
  if (!st_) return false;
  std::shared_ptr<detail::lock_handle> core;
  {
    std::lock_guard g(st_->m);
    if (auto* p = mine(*st_)) core = detail::hold_maker::core(p->h);
  }
  return core && core->lost();  // without st_->m: it may wait for a callback that takes it
}

void shared_mutex::on_lost(std::function<void(const std::string&)> cb) {
  if (!st_) throw usage_error("shared_mutex handle was moved from");
  st_->on_lost->set(std::move(cb));
}

const std::string& shared_mutex::name() const {
  if (!st_) throw usage_error("shared_mutex handle was moved from");
  return st_->name;
}

std::string shared_mutex::last_error() const {
  if (!st_) return {};
  std::lock_guard g(st_->m);
  return st_->last_error;
}

}  // namespace sqlock

namespace sqlock::detail {

hold_maker::target hold_maker::of(const shared_mutex& m, lock_kind kind) {
  if (!m.st_) throw usage_error("shared_mutex handle was moved from");
  require_shared(*m.st_);
  return {m.st_->c, m.st_->name, m.st_->opts, {.kind = kind}};
}

}  // namespace sqlock::detail
