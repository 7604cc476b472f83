// The lock-handle core: what every public handle (sqlock::mutex, shared_mutex, a semaphore's
// permits, election, sqlock::hold) does with a hold slot — fence, owner, renewal, last error,
// the loss state and the on_lost callback, release — written once, so every handle gives the
// same callback guarantee. Internal to the core.
//
// The callback guarantee: a callback replaced by on_lost(), or dropped by a release or the
// handle's end, is not called after that call returns, and a call of it running on another
// thread has returned by then (as std::stop_callback's destructor waits). Called on the thread
// that runs the callback (from inside it), they do not wait for it (it is that very call): it
// finishes, and it is not called again.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "client_impl.hpp"

namespace sqlock::detail {

/// A loss callback as the public handles take it.
using loss_fn = std::function<void(const std::string& name)>;

/// One handle's on_lost callback. A handle with many holds (a shared_mutex, an election)
/// shares one among them; every other handle has its own.
class loss_callback {
 public:
  /// Replaces the callback (null: none). Once this returns the callback replaced is not called
  /// again, and a call of it on another thread has returned (not waited for from inside one).
  void set(loss_fn fn);
  /// Calls the callback of the moment, if any, on this thread; swallows what it throws (a
  /// callback's failure must not stop the thread that found the loss).
  void call(const std::string& name) noexcept;

 private:
  std::mutex m_;
  std::condition_variable idle_;
  loss_fn fn_;
  std::vector<std::thread::id> running_;  // threads inside fn_ now
};

/// A handle's view of one hold slot. Either it follows the slot (a mutex handle: the hold of
/// its name at each moment, whichever thread took it) or it is one hold (`one_hold`: the hold
/// current when it was made; a release ends it, and later holds of the slot are not its).
/// Thread-safe; kept by shared_ptr so that a callback may end its handle.
class lock_handle {
 public:
  /// Subscribes `cb` (a new callback when null) to `s`'s losses. When `queue` is set, `s` is
  /// that mutex entry and releasing this hold lets the entry's next thread in.
  lock_handle(std::shared_ptr<client_impl> c, std::shared_ptr<hold_slot> s, bool one_hold,
              std::shared_ptr<loss_callback> cb = nullptr,
              std::shared_ptr<local_entry> queue = nullptr);
  /// Releases (one_hold) or stops watching (otherwise), as release() / detach().
  ~lock_handle();
  lock_handle(const lock_handle&) = delete;
  lock_handle& operator=(const lock_handle&) = delete;

  /// Whether its hold is there (obtained, not released; it may have been lost).
  bool held() const;
  /// Fencing token of the hold: usage_error when none, unsupported when the backend has none.
  std::uint64_t fence() const;
  /// Owner token of the hold: usage_error when none.
  std::string owner() const;
  /// True once the hold was found lost and the loss's callbacks returned.
  bool lost() const;
  /// Replaces this handle's callback (see the guarantee above).
  void on_lost(loss_fn fn);
  /// Renews now; false when lost. usage_error when none.
  bool renew();
  /// The last error a release or renewal swallowed.
  std::string last_error() const;
  /// The lock name.
  const std::string& name() const { return slot_->name; }
  /// The hold's lease as the backend granted it (usage_error when none).
  lease_info lease() const;

  /// Ends a one_hold handle's hold on the backend (once), after stopping its callback for it.
  /// Never throws; a failure is kept in last_error().
  void release() noexcept;
  /// Shortens the hold to `left` and leaves it on the server unreleased (run_exclusive's
  /// at_least); false when it was lost or the store did not answer.
  bool leave(milliseconds left) noexcept;
  /// Stops this handle's callback for the slot: once this returns it is not called from it,
  /// and a call running on another thread has returned.
  void detach() noexcept;

 private:
  // Whether the slot's current hold is this handle's; call with slot_->m held.
  bool mine() const;
  // Marks the hold released and unlocks `lk` (on slot_->m); whether the hold was there.
  bool end(std::unique_lock<std::mutex>& lk);

  std::shared_ptr<client_impl> client_;
  std::shared_ptr<hold_slot> slot_;
  std::shared_ptr<loss_callback> callback_;
  std::shared_ptr<local_entry> queue_;
  // Under slot_->m:
  std::uint64_t hold_id_ = 0;  // the one hold (0: follows the slot)
  bool subscribed_ = false;
  bool released_ = false;
  bool lost_at_release_ = false;
};

}  // namespace sqlock::detail
