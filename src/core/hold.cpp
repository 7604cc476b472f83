// sqlock::hold: one backend hold of its own, and the maker the lock classes build holds with.
#include "sqlock/hold.hpp"

#include "hold_maker.hpp"
#include "sqlock/random.hpp"

namespace sqlock {

namespace detail {

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

sqlock::hold hold_maker::take(const std::shared_ptr<client_impl>& c, const std::string& name,
                              const lock_options& o, const ask& a, steady_time deadline,
                              bool wait) {
  auto s = std::make_shared<hold_slot>(name);
  lock_request req{name,   random_token(), o.lease, a.holder.empty() ? c->opts().holder : a.holder,
                   a.kind, a.permits,      a.stop};
  if (!c->take(s, req, o, deadline, wait, c->observe.now(), a.watch_expiry)) return sqlock::hold();
  return sqlock::hold(c, std::move(s));
}

bool hold_maker::leave(sqlock::hold& h, milliseconds left) noexcept {
  if (!h.slot_) return false;
  bool ok = h.client_->leave(*h.slot_, left);
  h.slot_.reset();
  h.client_.reset();
  return ok;
}

}  // namespace detail

namespace {
const std::string no_name;

detail::hold_slot& held(const std::shared_ptr<detail::hold_slot>& s, const char* what) {
  if (!s) throw usage_error(std::string(what) + " of an empty hold");
  return *s;
}
}  // namespace

hold::hold(std::shared_ptr<detail::client_impl> c, std::shared_ptr<detail::hold_slot> s)
    : client_(std::move(c)), slot_(std::move(s)) {}

hold& hold::operator=(hold&& o) noexcept {
  if (this != &o) {
    release();
    client_ = std::move(o.client_);
    slot_ = std::move(o.slot_);
  }
  return *this;
}

hold::~hold() {
  release();
}

hold::operator bool() const noexcept {
  if (!slot_) return false;
  std::lock_guard g(slot_->m);
  return slot_->current.has_value();
}

void hold::release() noexcept {
  if (!slot_) return;
  {
    std::unique_lock lk(slot_->m);
    slot_->on_lost.clear();
    slot_->await_callbacks(lk);  // a callback still running ends before the hold does
  }
  client_->give_back(*slot_);  // keeps the slot: lost() and last_error() still answer
}

std::uint64_t hold::fence() const {
  auto& s = held(slot_, "fence()");
  return client_->fence_of(s);
}

std::string hold::owner() const {
  auto& s = held(slot_, "owner()");
  std::lock_guard g(s.m);
  if (!s.current) throw usage_error("owner() of lock '" + s.name + "' not held");
  return s.current->lease.owner;
}

bool hold::lost() const {
  if (!slot_) return false;
  std::unique_lock lk(slot_->m);
  if (slot_->lost) slot_->await_callbacks(lk);  // true once the loss's callbacks returned
  return slot_->lost;
}

void hold::on_lost(std::function<void(const std::string&)> cb) {
  auto& s = held(slot_, "on_lost()");
  std::unique_lock lk(s.m);
  s.on_lost.clear();
  s.await_callbacks(lk);  // the callback replaced is not called after this returns
  if (cb) s.on_lost.emplace_back(1, std::move(cb));
}

bool hold::renew() {
  auto& s = held(slot_, "renew()");
  return client_->renew_now(s);
}

const std::string& hold::name() const {
  return slot_ ? slot_->name : no_name;
}

std::string hold::last_error() const {
  if (!slot_) return {};
  std::lock_guard g(slot_->m);
  return slot_->last_error;
}

}  // namespace sqlock
