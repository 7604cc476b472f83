// The Asio forms of the asynchronous API (component sqlock::asio, standalone Asio): completion
// tokens over the core's callback form (sqlock/async.hpp), so a lock is awaited with a
// callback, asio::use_future or asio::use_awaitable in a coroutine, with the completion
// signature void(std::exception_ptr, sqlock::hold). The hold is empty when the lock was not
// obtained in time. A per-operation cancellation slot (asio::bind_cancellation_slot, a
// cancelled awaitable operation, a parallel group) ends the wait at once, leaving nothing of
// it on the server; the handler then gets sqlock::interrupted. The completion runs on the
// handler's associated executor (the coroutine's, the bound one), which is kept busy by the
// operation until it completes. A lock object is read when the operation starts; it may go
// away after that.
#pragma once

#include <asio/associated_cancellation_slot.hpp>
#include <asio/associated_executor.hpp>
#include <asio/async_result.hpp>
#include <asio/cancellation_type.hpp>
#include <asio/dispatch.hpp>
#include <asio/executor_work_guard.hpp>
#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>

#include "sqlock/async.hpp"

namespace sqlock {

/// The completion signature of every operation of this header.
using acquire_signature = void(std::exception_ptr, hold);

namespace detail {

// The state of one operation between its start and its completion: the handler, a work guard
// on its executor, the stop source its cancellation slot requests.
template <class Handler>
struct operation {
  explicit operation(Handler&& h)
      : handler(std::move(h)),
        work(asio::make_work_guard(asio::get_associated_executor(handler))) {}
  Handler handler;
  asio::executor_work_guard<asio::associated_executor_t<Handler>> work;
  std::stop_source stop;
  std::optional<std::stop_callback<std::function<void()>>> caller_stop;  // the wait's own token
};

// Starts `start(handler, wait)` (one of the callback forms of async.hpp) for `token`.
template <class Token, class Start>
auto initiate(Token&& token, async_wait w, Start start) {
  return asio::async_initiate<Token, acquire_signature>(
      [start = std::move(start)](auto completion, async_wait wait) mutable {
        using handler_t = decltype(completion);
        auto op = std::make_shared<operation<handler_t>>(std::move(completion));
        auto slot = asio::get_associated_cancellation_slot(op->handler);
        if (slot.is_connected())
          slot.assign([op](asio::cancellation_type) { op->stop.request_stop(); });
        if (wait.stop.stop_possible())  // a stop_token given too: either ends the wait
          op->caller_stop.emplace(wait.stop,
                                  std::function<void()>([op] { op->stop.request_stop(); }));
        wait.stop = op->stop.get_token();
        start(
            [op](std::exception_ptr e, hold h) mutable {
              auto ex = asio::get_associated_executor(op->handler);
              // Kept until dispatch() returns: posting from this thread wakes the executor's
              // context after letting go of its lock, so the context must not run out of work
              // (and be destroyed by its owner once run() returns) before then.
              auto posting = asio::make_work_guard(ex);
              asio::dispatch(ex, [op, e = std::move(e), h = std::move(h)]() mutable {
                asio::get_associated_cancellation_slot(op->handler).clear();
                op->caller_stop.reset();
                auto handler = std::move(op->handler);
                auto work = std::move(op->work);
                std::move(handler)(std::move(e), std::move(h));
              });
            },
            std::move(wait));
      },
      token, std::move(w));
}

}  // namespace detail

/// Locks `m` (a sqlock::mutex or a sqlock::shared_mutex, exclusively), waiting as long as it
/// takes (or until cancelled).
template <class Lock, class Token>
auto async_lock(const Lock& m, Token&& token) {
  return detail::initiate(std::forward<Token>(token), {}, [&m](acquire_handler h, async_wait w) {
    acquire_async(m, std::move(h), std::move(w));
  });
}

/// Locks `m` (exclusively), waiting at most `d`: an empty hold when not obtained by then.
template <class Lock, class Rep, class Period, class Token>
auto async_try_lock_for(const Lock& m, const std::chrono::duration<Rep, Period>& d, Token&& token) {
  return detail::initiate(
      std::forward<Token>(token), async_wait::within(d),
      [&m](acquire_handler h, async_wait w) { acquire_async(m, std::move(h), std::move(w)); });
}

/// Locks `m` shared.
template <class Token>
auto async_lock_shared(const shared_mutex& m, Token&& token) {
  return detail::initiate(std::forward<Token>(token), {}, [&m](acquire_handler h, async_wait w) {
    acquire_shared_async(m, std::move(h), std::move(w));
  });
}

/// Locks `m` shared, waiting at most `d`.
template <class Rep, class Period, class Token>
auto async_try_lock_shared_for(const shared_mutex& m, const std::chrono::duration<Rep, Period>& d,
                               Token&& token) {
  return detail::initiate(std::forward<Token>(token), async_wait::within(d),
                          [&m](acquire_handler h, async_wait w) {
                            acquire_shared_async(m, std::move(h), std::move(w));
                          });
}

/// Takes one permit of `s`.
template <class Token>
auto async_acquire(const semaphore& s, Token&& token) {
  return detail::initiate(std::forward<Token>(token), {}, [&s](acquire_handler h, async_wait w) {
    acquire_async(s, std::move(h), std::move(w));
  });
}

/// Takes one permit of `s`, waiting at most `d`.
template <class Rep, class Period, class Token>
auto async_try_acquire_for(const semaphore& s, const std::chrono::duration<Rep, Period>& d,
                           Token&& token) {
  return detail::initiate(
      std::forward<Token>(token), async_wait::within(d),
      [&s](acquire_handler h, async_wait w) { acquire_async(s, std::move(h), std::move(w)); });
}

/// Campaigns in `e` with `value` until elected: the hold is the term.
template <class Token>
auto async_lead(const election& e, std::string value, Token&& token) {
  return detail::initiate(std::forward<Token>(token), {},
                          [&e, v = std::move(value)](acquire_handler h, async_wait w) {
                            lead_async(e, v, std::move(h), std::move(w));
                          });
}

/// Campaigns in `e` with `value`, waiting at most `d` to be elected.
template <class Rep, class Period, class Token>
auto async_try_lead_for(const election& e, std::string value,
                        const std::chrono::duration<Rep, Period>& d, Token&& token) {
  return detail::initiate(std::forward<Token>(token), async_wait::within(d),
                          [&e, v = std::move(value)](acquire_handler h, async_wait w) {
                            lead_async(e, v, std::move(h), std::move(w));
                          });
}

}  // namespace sqlock
