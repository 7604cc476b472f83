// The three forms an acquire case of the conformance suite runs through: the blocking call
// (acquire(), try_acquire_until_steady(), lead()), the core's std::future form (sqlock/async.hpp)
// and the Asio form (sqlock/asio.hpp: a handler bound to an io_context's executor, a stop
// mapped to its cancellation slot). take(form, what, deadline, stop) acquires `what` (one
// kind of one lock object: exclusive_of, shared_of, permit_of, campaign_of) in that form, so
// each case is written once with the form as a parameter. The Asio form is there when the
// build made sqlock::asio (SQLOCK_TEST_ASIO, set by tests/CMakeLists.txt).
#pragma once

#include <chrono>
#include <exception>
#include <future>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "sqlock/async.hpp"
#include "sqlock/client.hpp"

#ifdef SQLOCK_TEST_ASIO
#include <asio/bind_cancellation_slot.hpp>
#include <asio/bind_executor.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>

#include "sqlock/asio.hpp"
#endif

namespace sqlock::test {

/// How an acquire case takes its holds.
enum class acquire_form { blocking, future, asio };

/// The form's name for a test's trace.
inline const char* form_label(acquire_form f) {
  switch (f) {
    case acquire_form::blocking:
      return "blocking";
    case acquire_form::future:
      return "future";
    case acquire_form::asio:
      return "asio";
  }
  return "?";
}

/// The forms of this build: the Asio form where sqlock::asio was made.
inline std::vector<acquire_form> acquire_forms() {
#ifdef SQLOCK_TEST_ASIO
  return {acquire_form::blocking, acquire_form::future, acquire_form::asio};
#else
  return {acquire_form::blocking, acquire_form::future};
#endif
}

/// An exclusive hold of a mutex or a shared_mutex.
template <class Lock>
struct exclusive_of {
  Lock& l;
  hold blocking(steady_time d, std::stop_token s) const {
    return d == steady_time::max() ? l.acquire(s) : l.try_acquire_until_steady(d, s);
  }
  std::future<hold> future(async_wait w) const { return acquire_future(l, std::move(w)); }
#ifdef SQLOCK_TEST_ASIO
  template <class Token>
  void asio_wait(Token&& t) const {
    async_lock(l, std::forward<Token>(t));
  }
  template <class Token>
  void asio_wait_for(steady_time::duration d, Token&& t) const {
    async_try_lock_for(l, d, std::forward<Token>(t));
  }
#endif
};

/// A shared hold of a shared_mutex.
struct shared_of {
  shared_mutex& l;
  hold blocking(steady_time d, std::stop_token s) const {
    return d == steady_time::max() ? l.acquire_shared(s) : l.try_acquire_shared_until_steady(d, s);
  }
  std::future<hold> future(async_wait w) const { return acquire_shared_future(l, std::move(w)); }
#ifdef SQLOCK_TEST_ASIO
  template <class Token>
  void asio_wait(Token&& t) const {
    async_lock_shared(l, std::forward<Token>(t));
  }
  template <class Token>
  void asio_wait_for(steady_time::duration d, Token&& t) const {
    async_try_lock_shared_for(l, d, std::forward<Token>(t));
  }
#endif
};

/// One permit of a semaphore.
struct permit_of {
  semaphore& s;
  hold blocking(steady_time d, std::stop_token st) const {
    return d == steady_time::max() ? s.acquire(st) : s.try_acquire_until_steady(d, st);
  }
  std::future<hold> future(async_wait w) const { return acquire_future(s, std::move(w)); }
#ifdef SQLOCK_TEST_ASIO
  template <class Token>
  void asio_wait(Token&& t) const {
    async_acquire(s, std::forward<Token>(t));
  }
  template <class Token>
  void asio_wait_for(steady_time::duration d, Token&& t) const {
    async_try_acquire_for(s, d, std::forward<Token>(t));
  }
#endif
};

/// A term of an election, campaigning with `value`.
struct campaign_of {
  election& e;
  std::string value;
  hold blocking(steady_time d, std::stop_token s) const {
    return d == steady_time::max() ? e.lead(value, s) : e.try_lead_until_steady(value, d, s);
  }
  std::future<hold> future(async_wait w) const { return lead_future(e, value, std::move(w)); }
#ifdef SQLOCK_TEST_ASIO
  template <class Token>
  void asio_wait(Token&& t) const {
    async_lead(e, value, std::forward<Token>(t));
  }
  template <class Token>
  void asio_wait_for(steady_time::duration d, Token&& t) const {
    async_try_lead_for(e, value, d, std::forward<Token>(t));
  }
#endif
};

#ifdef SQLOCK_TEST_ASIO
/// The Asio form: the operation's handler runs on an io_context this thread runs (the
/// operation keeps it busy until then); a stop emits the cancellation slot's signal on it.
template <class What>
hold take_through_asio(const What& what, steady_time deadline, std::stop_token stop) {
  asio::io_context io;
  asio::cancellation_signal cancel;
  std::exception_ptr error;
  hold got;
  auto handler = asio::bind_cancellation_slot(
      cancel.slot(), asio::bind_executor(io, [&](std::exception_ptr e, hold h) {
        error = std::move(e);
        got = std::move(h);
      }));
  if (deadline == steady_time::max()) {
    what.asio_wait(std::move(handler));
  } else {
    auto left = deadline - std::chrono::steady_clock::now();
    what.asio_wait_for(std::max(left, steady_time::duration::zero()), std::move(handler));
  }
  // Emitted on the io_context's thread (a slot is not for other threads); a stop after the
  // completion finds the slot cleared, or is never run once run() returned.
  std::stop_callback on_stop(
      stop, [&] { asio::post(io, [&] { cancel.emit(asio::cancellation_type::terminal); }); });
  io.run();
  if (error) std::rethrow_exception(error);
  return got;
}
#endif

/// Acquires `what` in form `f`: waiting until `deadline` (an empty hold when not obtained by
/// then; none: as long as it takes) or a stop of `stop` (interrupted).
template <class What>
hold take(acquire_form f, const What& what, steady_time deadline = steady_time::max(),
          std::stop_token stop = {}) {
  switch (f) {
    case acquire_form::blocking:
      return what.blocking(deadline, std::move(stop));
    case acquire_form::future:
      return what.future(async_wait{deadline, std::move(stop)}).get();
    case acquire_form::asio:
#ifdef SQLOCK_TEST_ASIO
      return take_through_asio(what, deadline, std::move(stop));
#else
      break;
#endif
  }
  throw usage_error("this build has no such acquire form");
}

/// take() on a thread of its own: a waiter while the test releases what it waits for.
template <class What>
std::future<hold> take_in_background(acquire_form f, What what, steady_time deadline,
                                     std::stop_token stop = {}) {
  return std::async(std::launch::async, [f, what = std::move(what), deadline, stop] {
    return take(f, what, deadline, stop);
  });
}

}  // namespace sqlock::test
