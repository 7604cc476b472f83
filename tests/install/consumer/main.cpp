// Uses the installed library: connect to a SQLite file, take a lock, print its fence.
#include <sqlock/client.hpp>

#include <iostream>
#include <mutex>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  auto c = sqlock::connect(std::string("sqlite:") + argv[1]);
  auto l = c.make_lock("consumer");
  std::lock_guard g(l);
  std::cout << "fence " << l.fence() << "\n";
  return 0;
}
