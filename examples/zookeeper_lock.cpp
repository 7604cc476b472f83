// The first example of docs/backends/zookeeper.md: a fair lock on a ZooKeeper ensemble and its
// fence. Compiled by the normal build, not run (it needs the ensemble its URL names); the
// ZooKeeper backend's own tests run the same calls against the test servers.
// begin-snippet: zookeeper
#include <sqlock/client.hpp>

#include <iostream>
#include <mutex>

int main() {
  auto c = sqlock::connect("zookeeper://zk1:2181,zk2:2181,zk3:2181/myapp?session_timeout=10s");
  auto l = c.make_lock("orders:42");
  std::unique_lock g(l);           // waits in FIFO order; woken by a watch on its predecessor only
  std::cout << l.fence() << "\n";  // czxid of the winning node: globally monotonic
}
// end-snippet
