// libFuzzer target: the ZooKeeper znode names of lock names. znode_name() round-trips through
// lock_name(), never contains '/' and is never "." or ".."; lock_name() of arbitrary text
// returns a name or nothing, without a crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "sqlock/zookeeper/zookeeper.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (text.empty()) return 0;  // lock names are never empty
  std::string z = sqlock::zookeeper::znode_name(text);
  if (z.find('/') != std::string::npos || z == "." || z == "..") std::abort();
  auto back = sqlock::zookeeper::lock_name(z);
  if (!back || *back != text) std::abort();
  (void)sqlock::zookeeper::lock_name(text);
  return 0;
}
