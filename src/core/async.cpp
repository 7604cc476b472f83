// The asynchronous acquire API (sqlock/async.hpp): a take of a lock object's hold started on the
// driver (async_driver.hpp), the hold made from its lease as the blocking take makes it
// (client_impl::prepare / adopt / failed), and the future forms over the callback forms.
#include "sqlock/async.hpp"

#include "async_driver.hpp"
#include "hold_maker.hpp"
#include "sqlock/random.hpp"

namespace sqlock {

namespace detail {

void hold_maker::take_async(const target& t, steady_time deadline,
                            std::function<void(std::exception_ptr, sqlock::hold)> done) {
  const auto& c = t.c;
  auto s = std::make_shared<hold_slot>(t.name);
  lock_request req{
      t.name,   random_token(), t.o.lease, t.a.holder.empty() ? c->opts().holder : t.a.holder,
      t.a.kind, t.a.permits,    t.a.stop};
  const auto started = c->observe.now();
  c->prepare(req, deadline);
  const auto sent = std::chrono::steady_clock::now();
  auto a = c->b().make_acquisition(req, c->opts().waiting);
  auto finish = [c, s, req, o = t.o, started, sent, watch = t.a.watch_expiry, cb = t.a.on_lost,
                 done = std::move(done)](std::exception_ptr e, std::optional<lease_info> got) {
    sqlock::hold h;
    try {
      if (e) {
        try {
          std::rethrow_exception(e);
        } catch (const connection_error&) {
          c->failed(req);  // interrupted when it was stopped
          throw;
        }
      }
      if (c->adopt(s, req, o, std::move(got), sent, started, watch))
        h = make(std::make_shared<lock_handle>(c, s, true, cb));
    } catch (...) {
      done(std::current_exception(), sqlock::hold());
      return;
    }
    done(nullptr, std::move(h));
  };
  async_driver::start(std::move(a), std::move(req), deadline, c->opts().waiting, std::move(finish));
}

}  // namespace detail

namespace {

using detail::hold_maker;

// Starts the take of `make()`'s target; what fails before it starts reaches `h` on a driver
// thread too, so that the handler is never called inside the call.
template <class Make>
void start(Make make, const acquire_handler& h, const async_wait& w) {
  try {
    auto t = make();
    t.a.stop = w.stop;
    hold_maker::take_async(t, w.deadline, h);
  } catch (...) {
    detail::async_driver::post([h, e = std::current_exception()] { h(e, hold()); });
  }
}

template <class Start>
std::future<hold> future_of(Start s) {
  auto p = std::make_shared<std::promise<hold>>();
  auto f = p->get_future();
  s([p](std::exception_ptr e, hold h) {
    if (e)
      p->set_exception(std::move(e));
    else
      p->set_value(std::move(h));
  });
  return f;
}

}  // namespace

void acquire_async(const mutex& m, acquire_handler h, async_wait w) {
  start([&] { return hold_maker::of(m); }, h, w);
}

void acquire_async(const shared_mutex& m, acquire_handler h, async_wait w) {
  start([&] { return hold_maker::of(m, lock_kind::exclusive); }, h, w);
}

void acquire_shared_async(const shared_mutex& m, acquire_handler h, async_wait w) {
  start([&] { return hold_maker::of(m, lock_kind::shared); }, h, w);
}

void acquire_async(const semaphore& s, acquire_handler h, async_wait w) {
  start([&] { return hold_maker::of(s); }, h, w);
}

void lead_async(const election& e, std::string value, acquire_handler h, async_wait w) {
  start([&] { return hold_maker::of(e, value); }, h, w);
}

std::future<hold> acquire_future(const mutex& m, async_wait w) {
  return future_of([&](acquire_handler h) { acquire_async(m, std::move(h), w); });
}

std::future<hold> acquire_future(const shared_mutex& m, async_wait w) {
  return future_of([&](acquire_handler h) { acquire_async(m, std::move(h), w); });
}

std::future<hold> acquire_shared_future(const shared_mutex& m, async_wait w) {
  return future_of([&](acquire_handler h) { acquire_shared_async(m, std::move(h), w); });
}

std::future<hold> acquire_future(const semaphore& s, async_wait w) {
  return future_of([&](acquire_handler h) { acquire_async(s, std::move(h), w); });
}

std::future<hold> lead_future(const election& e, std::string value, async_wait w) {
  return future_of([&](acquire_handler h) { lead_async(e, std::move(value), std::move(h), w); });
}

}  // namespace sqlock
