// Links the header-only sqlock::asio alone: takes an in-process lock through asio::use_future.
#include <sqlock/asio.hpp>

#include <asio/use_future.hpp>
#include <iostream>

int main() {
  auto c = sqlock::connect("memory:");
  auto h = sqlock::async_lock(c.make_lock("asio"), asio::use_future).get();
  std::cout << (h ? "held by use_future" : "not held") << "\n";
  return h ? 0 : 1;
}
