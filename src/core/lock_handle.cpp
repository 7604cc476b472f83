// The lock-handle core (lock_handle.hpp): a handle's callback and its view of a hold slot.
#include "lock_handle.hpp"

#include <algorithm>

namespace sqlock::detail {

// ---- loss_callback ----

void loss_callback::set(loss_fn fn) {
  std::unique_lock lk(m_);
  loss_fn old = std::exchange(fn_, std::move(fn));
  const auto me = std::this_thread::get_id();
  idle_.wait(lk, [&] {
    return running_.empty() || std::find(running_.begin(), running_.end(), me) != running_.end();
  });
  lk.unlock();  // `old` goes without the lock: what it captured may call back
}

void loss_callback::call(const std::string& name) noexcept {
  std::unique_lock lk(m_);
  if (!fn_) return;
  loss_fn fn = fn_;  // set() may replace fn_ while this copy runs: it waits for it
  const auto me = std::this_thread::get_id();
  running_.push_back(me);
  lk.unlock();
  try {
    fn(name);
  } catch (...) {
    // A callback's failure must not stop the thread that found the loss.
  }
  fn = nullptr;  // its captures go before set() may return
  lk.lock();
  running_.erase(std::find(running_.begin(), running_.end(), me));
  if (running_.empty()) idle_.notify_all();
}

// ---- lock_handle ----

lock_handle::lock_handle(std::shared_ptr<client_impl> c, std::shared_ptr<hold_slot> s,
                         bool one_hold, std::shared_ptr<loss_callback> cb,
                         std::shared_ptr<local_entry> queue)
    : client_(std::move(c)),
      slot_(std::move(s)),
      callback_(cb ? std::move(cb) : std::make_shared<loss_callback>()),
      queue_(std::move(queue)) {
  std::lock_guard g(slot_->m);
  if (one_hold && slot_->current) hold_id_ = slot_->current->id;
  slot_->callbacks.push_back(callback_);
  subscribed_ = true;
}

lock_handle::~lock_handle() {
  if (hold_id_ != 0)
    release();
  else
    detach();
}

bool lock_handle::mine() const {
  return !released_ && slot_->current && (hold_id_ == 0 || slot_->current->id == hold_id_);
}

bool lock_handle::held() const {
  std::lock_guard g(slot_->m);
  return mine();
}

std::uint64_t lock_handle::fence() const {
  std::lock_guard g(slot_->m);
  if (!mine()) throw usage_error("fence() of lock '" + slot_->name + "' not held");
  if (!client_->b().caps().fencing)
    throw unsupported(client_->b().kind() + " backend gives no fencing tokens");
  return slot_->current->lease.fence;
}

std::string lock_handle::owner() const {
  return lease().owner;
}

lease_info lock_handle::lease() const {
  std::lock_guard g(slot_->m);
  if (!mine()) throw usage_error("owner() of lock '" + slot_->name + "' not held");
  return slot_->current->lease;
}

bool lock_handle::lost() const {
  std::unique_lock lk(slot_->m);
  if (released_) return lost_at_release_;
  if (slot_->lost) slot_->await_callbacks(lk);  // true once the loss's callbacks returned
  return slot_->lost;
}

void lock_handle::on_lost(loss_fn fn) {
  callback_->set(std::move(fn));
}

bool lock_handle::renew() {
  {
    std::lock_guard g(slot_->m);
    if (!mine()) throw usage_error("renew() on lock '" + slot_->name + "' that is not held");
  }
  // Copies: a callback the renewal fires may end this handle.
  auto c = client_;
  auto s = slot_;
  return c->renew_now(*s);
}

std::string lock_handle::last_error() const {
  std::lock_guard g(slot_->m);
  return slot_->last_error;
}

void lock_handle::detach() noexcept {
  std::unique_lock lk(slot_->m);
  if (!subscribed_) return;
  subscribed_ = false;
  std::erase(slot_->callbacks, callback_);
  slot_->await_callbacks(lk);  // a call from this slot under way ends first
}

bool lock_handle::end(std::unique_lock<std::mutex>& lk) {
  const bool had = mine();
  lost_at_release_ = had && slot_->lost;
  released_ = true;
  lk.unlock();
  return had;
}

void lock_handle::release() noexcept {
  detach();
  std::unique_lock lk(slot_->m);
  if (released_) return;
  if (end(lk)) client_->give_back(*slot_);  // keeps the slot: last_error() still answers
  if (queue_) queue_->leave_queue();
}

bool lock_handle::leave(milliseconds left) noexcept {
  detach();
  std::unique_lock lk(slot_->m);
  if (released_) return false;
  const bool ok = end(lk) && client_->leave(*slot_, left);
  if (queue_) queue_->leave_queue();
  return ok;
}

}  // namespace sqlock::detail
