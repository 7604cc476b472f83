// Background work of a backend on the library's driver threads, instead of a thread of its own.
// Part of the backend-author API.
#pragma once

#include <functional>

#include "sqlock/export.hpp"
#include "sqlock/types.hpp"

namespace sqlock {

/// Runs `task` at `when` (at once when it has passed) on one of the process's driver threads:
/// the few threads that drive every asynchronous acquisition (docs/async.md), started on first
/// use. For periodic or batched store calls a backend would otherwise give a thread of their
/// own. The task should return soon: a store call in it is bounded by its own deadline, as an
/// attempt is, and it must not wait for another task. A task outliving what it refers to must
/// find out by itself (hold a std::weak_ptr). Never blocks; never throws but std::bad_alloc.
SQLOCK_API void run_in_background(steady_time when, std::function<void()> task);

}  // namespace sqlock
