// The client's copy of sqlock.lock_key() (see lock_key.hpp).
#include "lock_key.hpp"

#include <openssl/evp.h>

#include <array>

#include "sqlock/errors.hpp"

namespace sqlock::postgres {

std::int64_t lock_key(std::string_view name) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  if (EVP_Digest(name.data(), name.size(), md.data(), &len, EVP_sha256(), nullptr) != 1 || len < 8)
    throw backend_error("SHA-256 of a lock name failed (OpenSSL)");
  std::uint64_t key = 0;
  for (std::size_t i = 0; i < 8; ++i) key = (key << 8) | md[i];
  return static_cast<std::int64_t>(key);  // two's complement, as the SQL cast to bigint
}

}  // namespace sqlock::postgres
