// SHA-256 of a lock name through OpenSSL, for the backends that derive a server-side lock
// identity from a name: MySQL's hashed GET_LOCK names (mysql/lock_name.cpp) and PostgreSQL's
// advisory keys (postgres/lock_key.cpp). Header-only, so that the core does not link OpenSSL:
// each backend that includes it links OpenSSL::Crypto.
#pragma once

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <string_view>

#include "sqlock/errors.hpp"

namespace sqlock {

/// The SHA-256 digest of `name`'s bytes; backend_error should OpenSSL fail.
inline std::array<unsigned char, 32> sha256_of_name(std::string_view name) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  if (EVP_Digest(name.data(), name.size(), md.data(), &len, EVP_sha256(), nullptr) != 1 ||
      len != 32)
    throw backend_error("SHA-256 of a lock name failed (OpenSSL)");
  std::array<unsigned char, 32> out{};
  std::copy_n(md.begin(), out.size(), out.begin());
  return out;
}

}  // namespace sqlock
