// libFuzzer target: list()'s decoding of the keys a Redis SCAN returns (redis_names.hpp
// lock_of()). The first input byte picks a key prefix, the rest is a lock name and also a key.
// The owner key and the holders key of the name decode back to the name (exclusive for the
// owner key only), the lock's other keys decode to nothing, and an arbitrary key decodes to
// nothing or to a name whose owner or holders key is exactly that key.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "redis_names.hpp"
#include "sqlock/redis/redis.hpp"

using namespace sqlock::redis;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static const std::string prefixes[] = {"sqlock", "app:locks", "a/b-c_d.e"};
  const std::string& prefix = prefixes[data[0] % 3];
  const std::string head = prefix + ":{";
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);

  auto own = detail::lock_of(owner_key(prefix, text), head);
  if (!own || own->name != text || !own->exclusive) std::abort();
  auto shared = detail::lock_of(detail::holders_key(prefix, text), head);
  if (!shared || shared->name != text || shared->exclusive) std::abort();
  for (const auto& other :
       {fence_key(prefix, text), info_key(prefix, text), release_channel(prefix, text),
        detail::hinfo_key(prefix, text), detail::meta_key(prefix, text)})
    if (detail::lock_of(other, head)) std::abort();

  if (auto f = detail::lock_of(text, head)) {
    auto key = f->exclusive ? owner_key(prefix, f->name) : detail::holders_key(prefix, f->name);
    if (key != text) std::abort();
  }
  return 0;
}
