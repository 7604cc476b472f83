// The asynchronous acquire API of the core (no Asio needed): a callback form and a std::future
// form for a mutex, both kinds of a shared_mutex, a semaphore's permits and an election's
// campaign, each with a deadline and a std::stop_token. A waiting acquisition holds no thread:
// a few process-wide driver threads run the attempts and wait for the store's release
// notifications or a timer in between (docs/async.md). sqlock/asio.hpp builds the Asio forms
// (completion tokens, coroutines, cancellation slots) on the callback form.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <future>
#include <stop_token>
#include <string>

#include "sqlock/client.hpp"
#include "sqlock/election.hpp"
#include "sqlock/export.hpp"
#include "sqlock/hold.hpp"
#include "sqlock/semaphore.hpp"
#include "sqlock/shared_mutex.hpp"

namespace sqlock {

/// Told once how an asynchronous acquisition ended: an error (then the hold is empty), or the
/// hold, empty when it was not obtained by the deadline. A stop ends it with `interrupted`,
/// as the blocking API does. Called on a driver thread, never inside the call that started
/// it; it should return soon (a blocking handler keeps one of the few driver threads busy).
using acquire_handler = std::function<void(std::exception_ptr, hold)>;

/// How long an asynchronous acquisition may wait, and what stops it.
struct async_wait {
  /// Not obtained by then: the handler gets an empty hold. At least one attempt is made.
  steady_time deadline = steady_time::max();
  /// A stop ends the wait promptly (the handler gets `interrupted`) and leaves nothing of
  /// the request on the server.
  std::stop_token stop{};

  /// A wait of at most `d` from now.
  template <class Rep, class Period>
  static async_wait within(const std::chrono::duration<Rep, Period>& d, std::stop_token s = {}) {
    auto now = std::chrono::steady_clock::now();
    auto left = std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
    return {left >= steady_time::max() - now ? steady_time::max() : now + left, std::move(s)};
  }
};

/// Acquires `m` (an exclusive hold of its name with its options; the handle may go away
/// meanwhile). The hold is a sqlock::hold of its own, not one of m.lock()'s levels: it does
/// not queue behind this client's threads in lock(), it waits for them in the store.
SQLOCK_API void acquire_async(const mutex& m, acquire_handler h, async_wait w = {});
/// Acquires `m` exclusively.
SQLOCK_API void acquire_async(const shared_mutex& m, acquire_handler h, async_wait w = {});
/// Acquires `m` shared.
SQLOCK_API void acquire_shared_async(const shared_mutex& m, acquire_handler h, async_wait w = {});
/// Acquires one permit of `s`.
SQLOCK_API void acquire_async(const semaphore& s, acquire_handler h, async_wait w = {});
/// Campaigns in `e` with `value` until elected (the hold is the term, as election::lead()).
SQLOCK_API void lead_async(const election& e, std::string value, acquire_handler h,
                           async_wait w = {});

/// The std::future forms: the hold (empty when not obtained by the deadline) or the error.
SQLOCK_API std::future<hold> acquire_future(const mutex& m, async_wait w = {});
SQLOCK_API std::future<hold> acquire_future(const shared_mutex& m, async_wait w = {});
SQLOCK_API std::future<hold> acquire_shared_future(const shared_mutex& m, async_wait w = {});
SQLOCK_API std::future<hold> acquire_future(const semaphore& s, async_wait w = {});
SQLOCK_API std::future<hold> lead_future(const election& e, std::string value, async_wait w = {});

}  // namespace sqlock
