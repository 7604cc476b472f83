// sqlock::hold (a movable handle over the lock-handle core), and the maker the lock classes
// build holds with.
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
  return make(std::make_shared<lock_handle>(c, std::move(s), true, a.on_lost));
}

}  // namespace detail

namespace {
const std::string no_name;

detail::lock_handle& held(const std::shared_ptr<detail::lock_handle>& h, const char* what) {
  if (!h) throw usage_error(std::string(what) + " of an empty hold");
  return *h;
}
}  // namespace

hold::hold(std::shared_ptr<detail::lock_handle> core) : core_(std::move(core)) {}

hold& hold::operator=(hold&& o) noexcept {
  if (this != &o) {
    release();
    core_ = std::move(o.core_);
  }
  return *this;
}

hold::~hold() {
  release();
}

hold::operator bool() const noexcept {
  return core_ && core_->held();
}

void hold::release() noexcept {
  if (core_) core_->release();  // keeps the core: lost() and last_error() still answer
}

std::uint64_t hold::fence() const {
  return held(core_, "fence()").fence();
}

std::string hold::owner() const {
  return held(core_, "owner()").owner();
}

bool hold::lost() const {
  return core_ && core_->lost();
}

void hold::on_lost(std::function<void(const std::string&)> cb) {
  held(core_, "on_lost()").on_lost(std::move(cb));
}

bool hold::renew() {
  return held(core_, "renew()").renew();
}

const std::string& hold::name() const {
  return core_ ? core_->name() : no_name;
}

std::string hold::last_error() const {
  return core_ ? core_->last_error() : std::string();
}

}  // namespace sqlock
