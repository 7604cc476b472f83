// The second example of README.md, compiled and run by the tests (examples.kinds): the other
// lock kinds on one store — a reader-writer lock, a semaphore and a leader election — and the
// hold handed to another thread of docs/faq.md.
//   kinds URL    prints what it did, one line each
#include <sqlock/client.hpp>

#include <chrono>
#include <cstdint>
#include <iostream>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <utility>

namespace {
void read_config() {
  std::cout << "read config\n";
}
void encode(std::uint64_t fence) {
  std::cout << "encoded with fence " << fence << "\n";
}
void serve_as_primary(std::uint64_t term) {
  std::cout << "primary, term " << term << "\n";
}
void finish_order(std::uint64_t fence) {
  std::cout << "finished on a worker with fence " << fence << "\n";
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: kinds URL\n";
    return 2;
  }
  auto c = sqlock::connect(argv[1]);
  // begin-snippet: kinds
  auto config = c.make_shared_mutex("config");
  {
    std::shared_lock reading(config);  // with any other readers; std::unique_lock to write
    read_config();
  }
  auto encoders = c.make_semaphore("encoder", 3);  // at most 3 holders at once, everywhere
  if (sqlock::permit p = encoders.try_acquire_for(std::chrono::seconds(5))) {
    encode(p.fence());  // each permit is a hold of its own: lease, renewal, fence, loss
  }                     // released here
  auto primary = c.make_election("primary");
  primary.campaign("host-a:8080");   // waits until this process leads; `sqlock leader` shows it
  serve_as_primary(primary.term());  // terms rise from leader to leader
  primary.resign();
  // end-snippet

  // begin-snippet: handoff
  auto order = c.make_lock("orders:42");
  sqlock::hold h = order.acquire();  // or order.try_acquire_for(d): empty when not in time
  std::thread worker([h = std::move(h)]() mutable {
    finish_order(h.fence());
    h.release();  // from the worker (destroying the hold releases it too)
  });
  worker.join();
  // end-snippet
}
