// Links one backend component alone: prints the schemes registered without any module (run
// with SQLOCK_BACKEND_PATH naming an empty directory), then, given a SQLite file, takes a lock.
#include <sqlock/backend/registry.hpp>
#include <sqlock/client.hpp>

#include <iostream>
#include <mutex>

int main(int argc, char** argv) {
  for (const auto& s : sqlock::registered_schemes()) std::cout << s << "\n";
  if (argc > 1) {
    auto c = sqlock::connect(std::string("sqlite:") + argv[1]);
    auto l = c.make_lock("component");
    std::lock_guard g(l);
    std::cout << "fence " << l.fence() << "\n";
  }
  return 0;
}
