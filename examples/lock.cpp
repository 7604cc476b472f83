// The first example of README.md, compiled and run by the tests (examples.lock): an exclusive
// lock with a lease, a loss callback and a fencing token, used as a standard Lockable.
//   lock [URL]    default "sqlite:" (a file in ~/.local/state/sqlock); prints the fence
// begin-snippet: lock
#include <sqlock/client.hpp>

#include <chrono>
#include <cstdint>
#include <iostream>
#include <mutex>
#include <string>

void write_with_fence(std::uint64_t fence) {  // your write, carrying the fence to the store
  std::cout << "fence " << fence << "\n";
}

int main(int argc, char** argv) {
  // or "postgresql://app@db/app?mode=pessimistic", "redis://cache:6379", "zookeeper://zk1:2181/app"
  auto c = sqlock::connect(argc > 1 ? argv[1] : "sqlite:");
  auto l = c.make_lock("orders:42", {.lease = std::chrono::seconds(30)});
  l.on_lost([](const std::string& name) { std::cerr << name << ": lease lost, stop writing\n"; });
  {
    std::unique_lock g(l);        // waits for it; l.try_lock_for(d) would wait at most d
    write_with_fence(l.fence());  // strictly rising per name: the store can reject stale writers
  }                               // released here; a failed release never throws
}
// end-snippet
