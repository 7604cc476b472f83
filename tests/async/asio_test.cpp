// The Asio forms (sqlock/asio.hpp) on real stores: a callback completing on the io_context's
// thread, asio::use_future, coroutines (asio::use_awaitable) for every kind, and 100
// cancellations through a cancellation slot at 0-5 ms that leave nothing behind (list()).
#include <gtest/gtest.h>

#include <asio/bind_cancellation_slot.hpp>
#include <asio/bind_executor.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/use_future.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "async_stores.hpp"
#include "sqlock/asio.hpp"

namespace {

using namespace std::chrono_literals;
using sqlock::test::unique_name;

using asio_test = sqlock::test::async_store_test;

TEST_P(asio_test, callback_completes_on_the_handlers_executor) {
  auto c1 = connect();
  auto c2 = connect();
  const auto name = unique_name("cb");
  auto holder = c1.make_lock(name).acquire();
  asio::io_context io;
  bool on_io_thread = false;
  sqlock::hold got;
  auto waiter = c2.make_lock(name);
  sqlock::async_lock(waiter, asio::bind_executor(io, [&](std::exception_ptr e, sqlock::hold h) {
                       EXPECT_FALSE(e);
                       on_io_thread = io.get_executor().running_in_this_thread();
                       got = std::move(h);
                     }));
  std::thread releaser([&] {
    std::this_thread::sleep_for(100ms);
    holder.release();  // from another thread than the one that took it
  });
  io.run();  // returns once the handler ran: the operation kept the context busy until then
  releaser.join();
  EXPECT_TRUE(on_io_thread);
  EXPECT_TRUE(got);
}

TEST_P(asio_test, use_future_gives_an_empty_hold_at_the_deadline) {
  auto c1 = connect();
  auto c2 = connect();
  const auto name = unique_name("fut");
  auto holder = c1.make_lock(name).acquire();
  auto f = sqlock::async_try_lock_for(c2.make_lock(name), 1s, asio::use_future);
  EXPECT_FALSE(f.get());
  holder.release();
  EXPECT_TRUE(sqlock::async_try_lock_for(c2.make_lock(name), 10s, asio::use_future).get());
}

TEST_P(asio_test, coroutines_take_every_kind) {
  auto c = connect();
  const auto caps = c.caps();
  asio::io_context io;
  int done = 0;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto m = c.make_lock(unique_name("co"));
        auto h = co_await sqlock::async_lock(m, asio::use_awaitable);
        EXPECT_TRUE(h);
        auto busy = co_await sqlock::async_try_lock_for(connect().make_lock(m.name()), 500ms,
                                                        asio::use_awaitable);
        EXPECT_FALSE(busy);
        ++done;
        if (caps.shared) {
          auto rw = c.make_shared_mutex(unique_name("rw"));
          auto r = co_await sqlock::async_lock_shared(rw, asio::use_awaitable);
          auto r2 = co_await sqlock::async_try_lock_shared_for(rw, 5s, asio::use_awaitable);
          EXPECT_TRUE(r && r2);
          EXPECT_FALSE(co_await sqlock::async_try_lock_for(rw, 500ms, asio::use_awaitable));
        }
        if (caps.permits) {
          auto s = c.make_semaphore(unique_name("sem"), 1);
          auto p = co_await sqlock::async_acquire(s, asio::use_awaitable);
          EXPECT_TRUE(p);
          EXPECT_FALSE(co_await sqlock::async_try_acquire_for(s, 500ms, asio::use_awaitable));
        }
        if (caps.list && caps.holder_text) {
          auto e = c.make_election(unique_name("elect"));
          auto term = co_await sqlock::async_lead(e, "a", asio::use_awaitable);
          EXPECT_TRUE(term);
          EXPECT_FALSE(co_await sqlock::async_try_lead_for(connect().make_election(e.name()), "b",
                                                           500ms, asio::use_awaitable));
        }
        ++done;
      },
      [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
  io.run();
  EXPECT_EQ(done, 2);
}

TEST_P(asio_test, cancellation_slot_ends_the_wait_and_leaves_nothing) {
  auto c1 = connect();
  auto c2 = connect();
  const auto name = unique_name("cancel");
  auto holder = c1.make_lock(name).acquire();
  auto waiter = c2.make_lock(name);
  asio::io_context io;
  int interrupted = 0, late = 0;
  for (int i = 0; i < 100; ++i) {
    asio::cancellation_signal cancel;
    std::chrono::steady_clock::time_point cancelled{};
    bool ended = false;
    sqlock::async_try_lock_for(
        waiter, 10s,
        asio::bind_cancellation_slot(
            cancel.slot(), asio::bind_executor(io, [&](std::exception_ptr e, sqlock::hold h) {
              EXPECT_FALSE(h);
              if (e) {
                try {
                  std::rethrow_exception(e);
                } catch (const sqlock::interrupted&) {
                  ++interrupted;
                }
              }
              if (std::chrono::steady_clock::now() - cancelled > 2s) ++late;
              ended = true;
            })));
    asio::steady_timer t(io, std::chrono::microseconds(i * 50));
    t.async_wait([&](std::error_code) {
      cancelled = std::chrono::steady_clock::now();
      cancel.emit(asio::cancellation_type::terminal);
    });
    io.restart();
    io.run();
    EXPECT_TRUE(ended);
  }
  EXPECT_EQ(late, 0);
  EXPECT_EQ(interrupted, 100);  // a stopped wait ends as interrupted, as in the blocking API
  if (c1.caps().list) {
    auto seen = c1.list(name);
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].owner, holder.owner());
  }
  holder.release();
  EXPECT_TRUE(c1.make_lock(name).try_acquire());
}

INSTANTIATE_TEST_SUITE_P(stores, asio_test, sqlock::test::async_stores(false),
                         sqlock::test::store_label);

}  // namespace
