// The writer marks of many waiting exclusive requests that end at once without the lock (the
// asynchronous API's driver cancelling thousands of waits), removed in batches: one exchange
// with the store for all that are pending, instead of one each. No thread of its own: the
// first caller to find no batch running sends the pending marks, and keeps sending those that
// arrive meanwhile; the others only queue theirs. Each caller's continuation runs once its
// mark is gone (or could not be removed: the mark then expires by itself), on the thread that
// sent the batch.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sqlock/types.hpp"

namespace sqlock::sql {

class mark_clearer {
 public:
  /// A mark: the lock's name and the request's owner token.
  using mark = std::pair<std::string, std::string>;
  /// Removes a batch of marks by `deadline`; may throw (the marks then expire by themselves).
  using clear_fn = std::function<void(const std::vector<mark>& batch, steady_time deadline)>;

  /// `clear` removes each batch, bounded by `bound` per batch.
  mark_clearer(clear_fn clear, milliseconds bound);
  /// Waits for a batch another thread sends now; a batch this thread sends (a continuation
  /// destroying the client) ends after its continuations, leaving the rest to expire.
  ~mark_clearer();
  mark_clearer(const mark_clearer&) = delete;
  mark_clearer& operator=(const mark_clearer&) = delete;

  /// Removes the mark of (`name`, `owner`), then calls `then` (perhaps on another thread, the
  /// one sending the batch it joined). Never throws.
  void clear_then(std::string name, std::string owner, std::function<void()> then) noexcept;

 private:
  struct pending {
    mark m;
    std::function<void()> then;
  };
  // Shared with a sender, which may outlive this object when a continuation destroys it.
  struct state {
    std::mutex m;
    std::condition_variable idle;
    std::vector<pending> queue;
    bool sending = false;
    std::thread::id sender;
    bool closed = false;    // this object is being destroyed: the sender stops
    bool orphaned = false;  // ... by a continuation on the sender's own thread
  };

  // Sends batches until none is pending (or this object is gone).
  void send(const std::shared_ptr<state>& s) noexcept;

  const clear_fn clear_;
  const milliseconds bound_;
  const std::shared_ptr<state> state_ = std::make_shared<state>();
};

}  // namespace sqlock::sql
