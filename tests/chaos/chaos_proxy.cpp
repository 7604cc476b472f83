// A standalone TCP proxy for the chaos driver, around the project's test proxy
// (tests/support/tcp_proxy.hpp): `sqlock_chaos_proxy HOST PORT` prints "port N" (where clients
// connect), then obeys one command per line on stdin: "blackhole on", "blackhole off", "reset",
// "delay MS", "lose-replies on" (requests are forwarded, answers dropped), "lose-replies off"
// (the connections that lost answers are reset, new ones answered), and exits at end of input.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

#include "tcp_proxy.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: sqlock_chaos_proxy UPSTREAM_HOST UPSTREAM_PORT\n");
    return 64;
  }
  try {
    sqlock::test::tcp_proxy proxy(argv[1], std::stoi(argv[2]));
    std::printf("port %d\n", proxy.port());
    std::fflush(stdout);
    std::string line;
    while (std::getline(std::cin, line)) {
      std::istringstream in(line);
      std::string cmd, arg;
      in >> cmd >> arg;
      if (cmd == "blackhole")
        proxy.blackhole(arg == "on");
      else if (cmd == "lose-replies" && arg == "on")
        proxy.drop_replies(true);
      else if (cmd == "lose-replies")
        proxy.end_drop_with_reset();
      else if (cmd == "reset")
        proxy.reset_all();
      else if (cmd == "delay")
        proxy.delay(std::chrono::milliseconds(std::stol(arg)));
      else if (!cmd.empty())
        std::fprintf(stderr, "sqlock_chaos_proxy: unknown command '%s'\n", cmd.c_str());
      std::printf("ok\n");
      std::fflush(stdout);
    }
    return 0;
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "sqlock_chaos_proxy: %s\n", ex.what());
    return 1;
  }
}
