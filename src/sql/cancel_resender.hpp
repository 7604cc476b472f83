// What ends a statement blocked in a server when its caller is stopped: a request sent from
// elsewhere (PostgreSQL's cancel, MySQL's KILL QUERY) that the server forgets when it arrives
// before the statement does. So one request at the stop is not enough: from the stop on, a
// thread of its own repeats it until the blocked call has ended (this object is gone) or a grace
// period has passed, then runs a last resort (shutting the socket down) unless the call ended
// meanwhile. The requests may block until the server answers, which is why they run neither on
// the caller's thread nor on the one that requested the stop. Internal to the SQL backends.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <stop_token>

#include "sqlock/backend.hpp"

namespace sqlock::sql {

/// The pause between two requests: short enough that a stop ends a wait within a few of them.
inline constexpr milliseconds stop_request_every{20};
/// How long a stopped call may still run before the last resort (the socket shut down).
inline constexpr milliseconds stop_grace{500};

/// While it lives, a stop of its token repeats `request` on a thread of its own (see above).
class cancel_resender {
 public:
  /// `request` every `every` from the stop on, for `grace` at most; then `last` (if set), run
  /// under the lock that ~cancel_resender() takes, so never after the call ended.
  cancel_resender(const std::stop_token& stop, std::function<void()> request, milliseconds every,
                  milliseconds grace, std::function<void()> last = {});
  /// Ends the repetition (a request under way finishes on its thread).
  ~cancel_resender();
  cancel_resender(const cancel_resender&) = delete;
  cancel_resender& operator=(const cancel_resender&) = delete;

  /// True once the stop came.
  bool fired() const;

 private:
  struct shared;  // with the repeating thread, which may outlive this object

  std::shared_ptr<shared> shared_;
  std::optional<std::stop_callback<std::function<void()>>> on_stop_;
};

}  // namespace sqlock::sql
