// Taking a hold from the backend and giving it back (client_impl::take, give_back, leave), for
// every lock class of the core: the backend call, the hold's lease bookkeeping on steady_clock,
// statistics and observer events, and the hand-over to the renewal machinery.
#include <algorithm>

#include "client_impl.hpp"

namespace sqlock::detail {

using clock = std::chrono::steady_clock;

interrupted interrupted_error(const std::string& name) {
  return interrupted("the wait for lock '" + name + "' was stopped; nothing is held");
}

void client_impl::prepare(const lock_request& req, steady_time deadline) {
  require_kind(*backend_, req);
  if (req.stop.stop_requested()) throw interrupted_error(req.name);
  // A release of ours still on its way lands first: the request does not find the name busy
  // with it. Should it not land in time, the request finds the name as the store has it.
  if (releases_)
    releases_->settled(req.name, std::max(deadline, clock::now() + opts_.waiting.min_attempt));
  observe.attempt(req.name);
}

void client_impl::failed(const lock_request& req) {
  // The last request may have taken the lock with no answer back: release it in the
  // background rather than leave it to its lease (orphan_releases.hpp), by name, owner and
  // kind (the one thing a store needs to find a hold it sent no state of).
  orphans_->add(req, clock::now() + req.lease);
  if (req.stop.stop_requested()) throw interrupted_error(req.name);  // the caller stopped it
}

bool client_impl::take(const std::shared_ptr<hold_slot>& s, const lock_request& req,
                       const lock_options& o, steady_time deadline, bool wait, steady_time started,
                       bool watch_expiry) {
  prepare(req, deadline);
  const auto sent = clock::now();
  // One call: acquire() makes its first attempt at once, so a busy lock costs no extra
  // round trip (and no extra queue node on ZooKeeper) before the wait begins.
  std::optional<lease_info> got;
  try {
    got = wait ? acquire(*backend_, req, deadline, opts_.waiting)
               : backend_->try_acquire(req, sent + opts_.waiting.min_attempt);
  } catch (const connection_error&) {
    failed(req);
    throw;
  }
  return adopt(s, req, o, std::move(got), sent, started, watch_expiry);
}

bool client_impl::adopt(const std::shared_ptr<hold_slot>& s, const lock_request& req,
                        const lock_options& o, std::optional<lease_info> got, steady_time sent,
                        steady_time started, bool watch_expiry) {
  if (!got) {
    // The backend ended the wait as at its deadline and left nothing in the store.
    if (req.stop.stop_requested()) throw interrupted_error(req.name);
    stats.timeouts++;
    observe.timeout(req.name, started);
    return false;
  }
  const bool contended = got->waited;
  // The lease runs from when the winning request was sent, on steady_clock.
  if (got->sent != steady_time{}) sent = got->sent;
  backend_hold h;
  h.lease = std::move(*got);
  h.lease.kind = req.kind;
  h.lease.sent = sent;  // when this hold began (the observer's hold time)
  h.duration = o.lease;
  h.renew_every = o.renew_every.count() > 0 ? o.renew_every : o.lease / 3;
  if (h.renew_every.count() <= 0) h.renew_every = milliseconds(1);
  h.auto_renew = o.auto_renew;
  h.valid_until = sent + o.lease;
  h.next_renewal = sent + h.renew_every;
  const std::string owner = h.lease.owner;
  const auto fence = h.lease.fence;
  steady_time due = steady_time::max();
  {
    std::lock_guard g(s->m);
    h.expiry_watched = !o.auto_renew && watch_expiry;
    h.id = s->next_hold_id++;
    if (h.auto_renew)
      due = h.next_renewal;
    else if (h.expiry_watched)
      due = h.valid_until;
    s->current = std::move(h);
    s->lost = false;
  }
  stats.acquisitions++;
  if (contended) stats.contended++;
  observe.acquired(req.name, started, contended, fence);
  watch(s, owner, due);
  return true;
}

void client_impl::give_back(hold_slot& s) noexcept {
  std::unique_lock lk(s.m);
  std::optional<backend_hold> h = std::move(s.current);
  s.current.reset();
  lk.unlock();
  if (!h) return;
  unwatch(&s, h->lease.owner);
  if (releases_) {
    try {
      auto release = [this, name = s.name, held = *h](steady_time cap) {
        (void)release_now(name, held, cap);
      };
      releases_->post(s.name, std::move(release), clock::now() + opts_.release_timeout);
      return;
    } catch (...) {
      // No memory or thread to spare (nothing was handed over): release it here.
    }
  }
  if (auto failure = release_now(s.name, *h, steady_time::max())) {
    std::lock_guard g(s.m);
    s.last_error = std::move(*failure);
  }
}

std::optional<std::string> client_impl::release_now(const std::string& name, const backend_hold& h,
                                                    steady_time cap) noexcept {
  try {
    // Bounded: after the lease ends the store frees the lock anyway.
    auto now = clock::now();
    auto left = std::max<clock::duration>(h.valid_until - now, opts_.waiting.min_attempt);
    backend_->release(h.lease,
                      std::min(cap, now + std::min<clock::duration>(left, opts_.release_timeout)));
    stats.releases++;
    observe.released(name, h.lease.fence, h.lease.sent);
    return std::nullopt;
  } catch (const std::exception& ex) {
    // No answer: the hold may still be there, for nobody. Try again in the background, for as
    // long as its lease may run (a restarted etcd gives every lease its full TTL again).
    if (dynamic_cast<const connection_error*>(&ex))
      orphans_->add(h.lease, std::max(h.valid_until, clock::now() + h.duration));
    stats.release_errors++;
    observe.release_failed(name, h.lease.fence, h.lease.sent, ex.what());
    return std::string("release of lock '") + name + "' failed: " + ex.what();
  } catch (...) {
    stats.release_errors++;
    observe.release_failed(name, h.lease.fence, h.lease.sent, "unknown error");
    return std::string("release of lock '") + name + "' failed: unknown error";
  }
}

bool client_impl::leave(hold_slot& s, milliseconds left) noexcept {
  std::unique_lock lk(s.m);
  std::optional<backend_hold> h = std::move(s.current);
  s.current.reset();
  const bool was_lost = s.lost;
  lk.unlock();
  if (!h) return false;
  unwatch(&s, h->lease.owner);
  if (was_lost) return false;
  try {
    auto now = clock::now();
    // The server measures the shortened lease from when it gets the renewal, after `now`.
    bool ok = backend_->renew(
        h->lease, left,
        now + std::min<clock::duration>(std::max<clock::duration>(left, opts_.waiting.min_attempt),
                                        opts_.release_timeout));
    if (ok) observe.renewed(s.name, h->lease.fence);
    return ok;
  } catch (const std::exception& ex) {
    std::lock_guard g(s.m);
    s.last_error =
        std::string("shortening the lease of lock '") + s.name + "' failed: " + ex.what();
    return false;
  }
}

}  // namespace sqlock::detail
