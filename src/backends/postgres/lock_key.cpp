// The client's copy of sqlock.lock_key() (see lock_key.hpp).
#include "lock_key.hpp"

#include "sql/sha256.hpp"

namespace sqlock::postgres {

std::int64_t lock_key(std::string_view name) {
  const auto md = sha256_of_name(name);
  std::uint64_t key = 0;
  for (std::size_t i = 0; i < 8; ++i) key = (key << 8) | md[i];
  return static_cast<std::int64_t>(key);  // two's complement, as the SQL cast to bigint
}

}  // namespace sqlock::postgres
