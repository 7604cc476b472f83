// libFuzzer target: the Redis key encoding of lock names. encode_name() round-trips through
// decode_name() and never emits a character that would end the {hash tag} or act in a SCAN
// MATCH pattern; decode_name() of arbitrary text decodes or throws sqlock::error.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "sqlock/errors.hpp"
#include "sqlock/redis/redis.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (text.empty()) return 0;  // lock names are never empty
  std::string enc = sqlock::redis::encode_name(text);
  if (enc.find_first_of("{}*?[]\\") != std::string::npos) std::abort();
  if (sqlock::redis::decode_name(enc) != text) std::abort();
  std::string key = sqlock::redis::owner_key("sqlock", text);
  if (key.find(enc) == std::string::npos) std::abort();
  try {
    (void)sqlock::redis::decode_name(text);
  } catch (const sqlock::error&) {
  }
  return 0;
}
