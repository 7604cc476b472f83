// The client's copy of sqlock_lock_name() (see lock_name.hpp).
#include "lock_name.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cstdint>

#include "sqlock/errors.hpp"

namespace sqlock::mysql::detail {

namespace {

constexpr std::size_t readable_max = 57;

bool readable(std::string_view name) {
  return !name.empty() && name.size() <= readable_max &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
                  c == ':' || c == '/' || c == '-';
         });
}

}  // namespace

std::string get_lock_name(std::string_view name) {
  if (readable(name)) return "sqlock:" + std::string(name);
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  if (EVP_Digest(name.data(), name.size(), md.data(), &len, EVP_sha256(), nullptr) != 1)
    throw backend_error("SHA-256 of a lock name failed (OpenSSL)");
  static constexpr char hex[] = "0123456789abcdef";
  std::string out = "sqlock#";
  for (unsigned int i = 0; i < len && out.size() < 7 + readable_max; ++i) {
    out.push_back(hex[md[i] >> 4]);
    if (out.size() < 7 + readable_max) out.push_back(hex[md[i] & 0xF]);
  }
  return out;
}

}  // namespace sqlock::mysql::detail
