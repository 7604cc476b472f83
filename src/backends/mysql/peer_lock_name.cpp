// The peers' GET_LOCK names (see peer_lock_name.hpp). DistributedLock's rules are those of
// src/DistributedLock.MySql/MySqlDistributedLock.cs (GetSafeName, ToSafeName, ComputeHash) in
// github.com/madelson/DistributedLock.
#include "peer_lock_name.hpp"

#include <openssl/evp.h>

#include "sqlock/errors.hpp"

namespace sqlock::mysql::detail {

namespace {

constexpr std::size_t max_length = 64;  // MySqlDistributedLock.MaxNameLength
constexpr std::size_t hash_chars = 32;  // 160 bits of SHA-512 in base32

// ComputeHash: SHA-512, its first 160 bits as base32 (RFC 4648 alphabet, lower case), taking
// each byte's bits from the low end.
std::string hash32(std::string_view name) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!EVP_Digest(name.data(), name.size(), md, &len, EVP_sha512(), nullptr))
    throw backend_error("SHA-512 of a lock name failed");
  static constexpr char alphabet[] = "abcdefghijklmnopqrstuvwxyz234567";
  std::string out;
  unsigned buffer = 0, bits = 0, byte = 0;
  while (out.size() < hash_chars) {
    if (bits < 5) {
      buffer |= static_cast<unsigned>(md[byte++]) << bits;
      bits += 8;
    }
    out += alphabet[buffer & 31];
    buffer >>= 5;
    bits -= 5;
  }
  return out;
}

}  // namespace

std::string distributedlock_get_lock_name(std::string_view name) {
  std::string lower;
  for (unsigned char c : name) {
    if (c > 127)
      throw config_error("lock name '" + std::string(name) +
                         "' has non-ASCII characters: compat=distributedlock does not reproduce "
                         "DistributedLock.MySql's lower-casing of them; give its GET_LOCK name "
                         "with compat=raw");
    lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  const std::string base = name.empty() ? "__empty__" : lower;
  if (base == name && base.size() <= max_length) return base;
  return base.substr(0, max_length - hash_chars) + hash32(name);
}

std::string raw_get_lock_name(std::string_view name) {
  if (name.empty() || name.size() > max_length)
    throw config_error("lock name '" + std::string(name) +
                       "' is not a GET_LOCK name: give 1 to 64 characters");
  return std::string(name);
}

}  // namespace sqlock::mysql::detail
