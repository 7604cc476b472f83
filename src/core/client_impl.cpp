// The renewal machinery of a client: a scheduler thread that hands due renewals to a worker
// thread and watches every lease on steady_clock, and the loss reports of the backend.
#include "client_impl.hpp"

#include <algorithm>

#include <system_error>
#include "lock_handle.hpp"

#include "sqlock/random.hpp"

namespace sqlock::detail {

using clock = std::chrono::steady_clock;

namespace {
// Longest single try of an orphan release (orphan_releases.hpp).
constexpr milliseconds orphan_try_bound{1000};
}  // namespace

steady_time loss_time(const backend_hold& h) {
  return h.valid_until - std::min<clock::duration>(h.duration / 10, std::chrono::seconds(1));
}

client_impl::client_impl(std::shared_ptr<backend> b, client_options o)
    : backend_(std::move(b)), opts_(std::move(o)) {
  if (!backend_) throw config_error("client needs a backend");
  if (opts_.holder.empty()) opts_.holder = default_holder();
  const auto& w = opts_.waiting;
  if (w.initial.count() <= 0 || w.cap.count() <= 0 || w.notify_recheck.count() <= 0 ||
      w.retry_cap.count() <= 0 || w.min_attempt.count() <= 0 || w.retry_for.count() < 0)
    throw config_error("wait policy durations must be > 0");
  if (opts_.release_timeout.count() <= 0) throw config_error("release_timeout must be > 0");
  // One try of an orphan release is short: the next one follows, and a client being destroyed
  // waits for the try under way.
  orphans_ = std::make_unique<orphan_releases>(
      *backend_, std::min<milliseconds>(opts_.release_timeout, orphan_try_bound));
  if (backend_->release_in_background())
    releases_ = std::make_unique<release_sender>(opts_.release_timeout);
  observe = observe_point(opts_.observer, *backend_);
  if (!opts_.waiting.on_retry) opts_.waiting.on_retry = observe.retry_hook();
  renewer_ = std::thread([this] { renewal_loop(); });
  // The worker starts with the first renewal or sweep (start_worker): a short-lived client
  // (`sqlock run -- true`) never pays for it.
}

client_impl::~client_impl() {
  if (listener_ != 0) backend_->remove_loss_listener(listener_);
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
  renewer_.join();  // after it, nothing starts the worker
  if (worker_.joinable())
    worker_.join();  // waits for a backend call in progress to return (each has a deadline)
}

void client_impl::attach() {
  std::weak_ptr<client_impl> self = weak_from_this();
  listener_ =
      backend_->add_loss_listener([self](const std::string& name, const std::string& owner) {
        if (auto c = self.lock()) c->backend_lost(name, owner);
      });
}

void client_impl::backend_lost(const std::string& name, const std::string& owner) {
  std::shared_ptr<hold_slot> s;
  {
    std::lock_guard g(m_);
    auto it = owners_.find(owner);
    if (it != owners_.end()) s = it->second.lock();
  }
  if (!s || s->name != name) return;
  std::unique_lock lk(s->m);
  if (s->current && s->current->lease.owner == owner) mark_lost(*s, s->current->id, lk);
}

std::shared_ptr<local_entry> client_impl::entry(const std::string& name) {
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

void client_impl::watch(const std::shared_ptr<hold_slot>& s, const std::string& owner,
                        steady_time due) {
  {
    std::lock_guard g(m_);
    owners_[owner] = s;
    if (due == steady_time::max()) return;  // neither renewed nor expiry-watched
    renewing_[s.get()] = s;
  }
  poke(due);
}

void client_impl::poke(steady_time due) {
  bool wake = false;
  {
    std::lock_guard g(m_);
    wake = due < wake_at_;
  }
  if (wake) cv_.notify_all();
}

void client_impl::unwatch(hold_slot* s, const std::string& owner) {
  std::lock_guard g(m_);
  renewing_.erase(s);
  if (!owner.empty()) owners_.erase(owner);
}

void client_impl::mark_lost(hold_slot& e, std::uint64_t hold_id, std::unique_lock<std::mutex>& lk) {
  if (!e.current || e.current->id != hold_id || e.lost) return;
  e.lost = true;
  stats.losses++;
  observe.lost(e.name, e.current->lease.fence, e.current->lease.sent);
  auto callbacks = e.callbacks;
  const auto me = std::this_thread::get_id();
  e.callback_threads.push_back(me);
  lk.unlock();
  unwatch(&e, {});  // the owner stays registered until the hold is given back
  for (auto& cb : callbacks) cb->call(e.name);  // never throws
  lk.lock();
  // A handle that dropped its callback meanwhile waits for this (hold_slot::await_callbacks).
  e.callback_threads.erase(std::find(e.callback_threads.begin(), e.callback_threads.end(), me));
  if (e.callback_threads.empty()) e.callbacks_done.notify_all();
}

bool client_impl::renew_now(hold_slot& e) {
  std::unique_lock lk(e.m);
  if (!e.current) throw usage_error("renew() on lock '" + e.name + "' that is not held");
  if (e.lost) return false;
  backend_hold h = *e.current;
  lk.unlock();
  std::vector<renewal> batch{renewal_of(h)};
  backend_->renew_all(batch);
  return renewed(e, h, batch.front());
}

renewal client_impl::renewal_of(const backend_hold& h) const {
  renewal r;
  r.lease = &h.lease;
  r.duration = h.duration;
  // A renewal that has not answered when the lease runs out is moot: the hold is lost then.
  r.deadline = std::max(h.valid_until, clock::now() + opts_.waiting.min_attempt);
  return r;
}

bool client_impl::renewed(hold_slot& e, const backend_hold& h, const renewal& r) {
  if (r.result == renewal::outcome::unknown) {
    stats.renewal_failures++;
    observe.renewal_failed(e.name, h.lease.fence, r.error);
    std::unique_lock lk(e.m);
    e.last_error = r.error;
    if (!e.current || e.current->id != h.id) return !e.lost;
    if (clock::now() >= loss_time(*e.current)) {
      mark_lost(e, h.id, lk);
      return false;
    }
    // Outcome unknown: try again soon, before the lease runs out.
    auto left = loss_time(*e.current) - clock::now();
    auto retry = clock::now() + std::min<clock::duration>(left / 4, std::chrono::seconds(1));
    e.current->next_renewal = retry;
    lk.unlock();  // lock order: client mutex before entry mutex
    poke(retry);
    return true;
  }
  std::unique_lock lk(e.m);
  if (!e.current || e.current->id != h.id) return true;  // released meanwhile
  if (r.result == renewal::outcome::gone) {
    mark_lost(e, h.id, lk);
    return false;
  }
  stats.renewals++;
  observe.renewed(e.name, h.lease.fence);
  e.current->valid_until = r.sent + h.duration;
  e.current->next_renewal = r.sent + h.renew_every;
  return true;
}

// The scheduler: hands due renewals to the worker and watches every hold's lease on
// steady_clock. It never calls the backend itself, so a backend call that hangs (a
// blackholed connection) cannot delay the loss signal: a hold whose renewal is still in
// flight when its lease runs out is reported lost on time.
void client_impl::renewal_loop() {
  std::unique_lock lk(m_);
  auto next_sweep =
      opts_.sweep_every.count() > 0 ? clock::now() + opts_.sweep_every : steady_time::max();
  while (!stop_) {
    // Find the earliest renewal due and the holds whose lease ran out mid-renewal.
    steady_time next = next_sweep;
    std::vector<std::shared_ptr<hold_slot>> due;
    std::vector<std::shared_ptr<hold_slot>> early;  // renewals due soon
    std::vector<std::pair<std::shared_ptr<hold_slot>, std::uint64_t>> expired;
    auto now = clock::now();
    for (auto& [ptr, e] : renewing_) {
      std::lock_guard eg(e->m);
      if (!e->current || e->lost) continue;
      if (!e->current->auto_renew) {
        if (!e->current->expiry_watched) continue;
        if (loss_time(*e->current) <= now)
          expired.emplace_back(e, e->current->id);
        else
          next = std::min(next, loss_time(*e->current));
      } else if (e->current->in_flight) {
        if (loss_time(*e->current) <= now)
          expired.emplace_back(e, e->current->id);
        else
          next = std::min(next, loss_time(*e->current));
      } else if (e->current->next_renewal <= now) {
        e->current->in_flight = true;
        due.push_back(e);
      } else {
        if (e->current->next_renewal - now <= e->current->renew_every / 2) early.push_back(e);
        next = std::min(next, e->current->next_renewal);
      }
    }
    // Holds due within half their renewal period go with a batch that leaves now: the store
    // renews them in the same round trip, and renewals of many holds come in a few batches a
    // period instead of one call per hold.
    if (!due.empty()) {
      for (auto& e : early) {
        std::lock_guard eg(e->m);
        if (!e->current || e->lost || e->current->in_flight) continue;
        e->current->in_flight = true;
        due.push_back(e);
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
        start_worker();
      }
      work_cv_.notify_one();
    }
    lk.lock();
  }
}

// Called by the renewer with work_m_ held. Without a thread now (the system refused one), the
// queued renewals wait for the next hand-over; their holds are reported lost if none comes
// within their leases.
void client_impl::start_worker() {
  if (worker_.joinable()) return;
  try {
    worker_ = std::thread([this] { worker_loop(); });
  } catch (const std::system_error&) {
  }
}

// Runs renewals and sweeps off the scheduler thread: every renewal queued at the time in one
// batch (backend::renew_all), then a sweep if one was asked for.
void client_impl::worker_loop() {
  std::unique_lock lk(work_m_);
  for (;;) {
    work_cv_.wait(lk, [&] { return work_stop_ || !work_.empty(); });
    if (work_stop_) return;
    std::vector<std::shared_ptr<hold_slot>> batch;
    bool sweep = false;
    for (auto& e : work_) {
      if (e)
        batch.push_back(std::move(e));
      else
        sweep = true;
    }
    work_.clear();
    lk.unlock();
    if (!batch.empty()) renew_in_background(batch);
    if (sweep) {
      try {
        if (auto* a = backend_->admin()) a->sweep();
      } catch (...) {
        // Sweeping is best effort; the next round tries again.
      }
    }
    lk.lock();
  }
}

void client_impl::renew_in_background(const std::vector<std::shared_ptr<hold_slot>>& slots) {
  // The holds of the slots as they are now (a slot released meanwhile has none).
  std::vector<std::pair<hold_slot*, backend_hold>> held;
  held.reserve(slots.size());
  for (const auto& s : slots) {
    std::lock_guard g(s->m);
    if (!s->current) continue;
    if (s->lost) {
      s->current->in_flight = false;
      continue;
    }
    held.emplace_back(s.get(), *s->current);
  }
  if (held.empty()) return;
  std::vector<renewal> batch;  // points into `held`, which does not change from here on
  batch.reserve(held.size());
  for (const auto& [s, h] : held) batch.push_back(renewal_of(h));
  backend_->renew_all(batch);
  steady_time next = steady_time::max();
  for (std::size_t i = 0; i < held.size(); ++i) {
    auto& [s, h] = held[i];
    try {
      renewed(*s, h, batch[i]);
    } catch (...) {
      // A failure renewed() already recorded.
    }
    std::lock_guard g(s->m);
    if (!s->current || s->current->id != h.id) continue;
    s->current->in_flight = false;
    next = std::min(next, s->current->next_renewal);
  }
  if (next != steady_time::max()) poke(next);
}

}  // namespace sqlock::detail
