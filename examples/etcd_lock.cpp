// The first example of docs/backends/etcd.md: a fair lock on an etcd cluster and its fence.
// Compiled by the normal build, not run (it needs the cluster its URL names); the etcd backend's
// own tests run the same calls against the test servers.
// begin-snippet: etcd
#include <sqlock/client.hpp>

#include <chrono>
#include <iostream>
#include <mutex>

int main() {
  auto c = sqlock::connect("etcd://app:secret@etcd1:2379,etcd2:2379,etcd3:2379/myapp?timeout=2s");
  auto l = c.make_lock("orders:42", {.lease = std::chrono::seconds(10)});
  std::unique_lock g(l);  // queued by create revision; watches only the key just before its own
  // the fence is the hold's create revision: strictly rising, also across leaders
  std::cout << l.fence() << "\n";
}
// end-snippet
