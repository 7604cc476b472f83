// An Asio server with coroutines that locks per-entity names on PostgreSQL (docs/async.md):
// each request "add ENTITY N" reads a balance, yields, and writes it back under the lock of
// that entity, awaited with sqlock::async_try_lock_for (no thread waits for a lock). Clients
// in the same program send 200 requests on 20 connections over 4 entities at once; the
// balances come out exact only because the lock keeps each entity's read and write together.
//   asio_server URL    a postgresql:// URL (examples.asio_server runs it on the test server)
#include <asio/co_spawn.hpp>
#include <asio/connect.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read_until.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>
#include <iostream>
#include <map>
#include <sqlock/asio.hpp>
#include <sqlock/async.hpp>
#include <sqlock/random.hpp>
#include <sstream>
#include <string>

namespace {

using asio::ip::tcp;
using namespace std::chrono_literals;

constexpr int clients = 20, requests_per_client = 10, entities = 4;

struct server_state {
  sqlock::client locks;
  std::string prefix;  // this run's names: account:<run>:<entity>
  std::map<std::string, long> balances;
};

// One connection: requests in, new balances out.
asio::awaitable<void> serve(tcp::socket s, server_state& st) {
  std::string buf;
  for (;;) {
    std::size_t n = 0;
    try {
      n = co_await asio::async_read_until(s, asio::dynamic_buffer(buf), '\n', asio::use_awaitable);
    } catch (const std::system_error&) {
      co_return;  // the client hung up
    }
    std::istringstream line(buf.substr(0, n));
    buf.erase(0, n);
    std::string cmd, entity;
    long amount = 0;
    line >> cmd >> entity >> amount;
    // begin-snippet: asio-lock
    auto lock = st.locks.make_lock(st.prefix + entity);
    sqlock::hold h = co_await sqlock::async_try_lock_for(lock, 10s, asio::use_awaitable);
    // end-snippet
    std::string reply = "busy\n";
    if (h) {
      long v = st.balances[entity];  // read
      asio::steady_timer pause(s.get_executor(), 2ms);
      co_await pause.async_wait(asio::use_awaitable);  // other requests run meanwhile
      st.balances[entity] = v + amount;                // write: nobody else wrote in between
      h.release();
      reply = std::to_string(v + amount) + "\n";
    }
    co_await asio::async_write(s, asio::buffer(reply), asio::use_awaitable);
  }
}

asio::awaitable<void> accept(tcp::acceptor& a, server_state& st) {
  for (;;) {
    auto s = co_await a.async_accept(asio::use_awaitable);
    asio::co_spawn(a.get_executor(), serve(std::move(s), st), asio::detached);
  }
}

// One client: its requests, one at a time, on its own connection.
asio::awaitable<void> client(tcp::endpoint server, int id, int& answered) {
  tcp::socket s(co_await asio::this_coro::executor);
  co_await s.async_connect(server, asio::use_awaitable);
  std::string buf;
  for (int i = 0; i < requests_per_client; ++i) {
    std::string req = "add e" + std::to_string((id + i) % entities) + " 1\n";
    co_await asio::async_write(s, asio::buffer(req), asio::use_awaitable);
    auto n =
        co_await asio::async_read_until(s, asio::dynamic_buffer(buf), '\n', asio::use_awaitable);
    if (buf.substr(0, n) != "busy\n") ++answered;
    buf.erase(0, n);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: asio_server postgresql://...\n";
    return 2;
  }
  server_state st{
      sqlock::connect(argv[1]), "account:" + sqlock::random_token().substr(0, 8) + ":", {}};
  {
    // The core's future form (no Asio): the store answers before the server starts.
    // begin-snippet: future
    auto m = st.locks.make_lock(st.prefix + "setup");
    sqlock::hold h = sqlock::acquire_future(m, sqlock::async_wait::within(5s)).get();
    if (!h) return 1;  // not obtained within 5 s
    // end-snippet
  }
  asio::io_context io;
  tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
  asio::co_spawn(io, accept(acceptor, st), asio::detached);
  int answered = 0, finished = 0;
  for (int id = 0; id < clients; ++id)
    asio::co_spawn(io, client(acceptor.local_endpoint(), id, answered), [&](std::exception_ptr e) {
      if (e) std::rethrow_exception(e);
      if (++finished == clients) io.stop();
    });
  io.run();
  std::cout << answered << " requests, balances";
  bool exact = answered == clients * requests_per_client;
  for (int e = 0; e < entities; ++e) {
    auto v = st.balances["e" + std::to_string(e)];
    std::cout << " e" << e << "=" << v;
    exact = exact && v == clients * requests_per_client / entities;
  }
  std::cout << "\n";
  return exact ? 0 : 1;
}
