// The peers' advisory keys (see peer_key.hpp). DistributedLock's rules are those of
// src/DistributedLock.Postgres/PostgresAdvisoryLockKey.cs in github.com/madelson/DistributedLock.
#include "peer_key.hpp"

#include <openssl/evp.h>

#include <charconv>
#include <cstdio>

#include "sqlock/errors.hpp"

namespace sqlock::postgres {

namespace {

constexpr int ascii_bits = 7;
constexpr std::uint64_t ascii_max = (1u << ascii_bits) - 1;
constexpr std::size_t ascii_length = 64 / ascii_bits;  // 9 characters
constexpr std::size_t hex_part = 8, hex_length = 16;

std::int64_t combine(std::int32_t a, std::int32_t b) {
  return static_cast<std::int64_t>(
      (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
      static_cast<std::uint32_t>(b));
}

bool encode_ascii(std::string_view name, std::int64_t& key) {
  if (name.size() > ascii_length) return false;
  std::uint64_t r = 0;
  for (unsigned char c : name) {
    if (c > ascii_max) return false;
    r = (r << ascii_bits) | c;
  }
  r <<= 1;  // the 0 bit after the name
  for (std::size_t i = name.size(); i < ascii_length; ++i) r = (r << ascii_bits) | ascii_max;
  key = static_cast<std::int64_t>(r);
  return true;
}

bool decode_ascii(std::uint64_t bits, std::string& name) {
  std::size_t length = ascii_length;
  while (length > 0 && (bits & ascii_max) == ascii_max) {
    --length;
    bits >>= ascii_bits;
  }
  if ((bits & 1) != 0) return false;  // not an ASCII-encoded key
  bits >>= 1;
  name.assign(length, '\0');
  for (std::size_t i = length; i-- > 0;) {
    name[i] = static_cast<char>(bits & ascii_max);
    bits >>= ascii_bits;
  }
  return true;
}

bool parse_hex32(std::string_view s, std::int32_t& out) {
  std::uint32_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (ec != std::errc() || p != s.data() + s.size() || s.size() != hex_part) return false;
  out = static_cast<std::int32_t>(v);  // two's complement, as int.TryParse(hex) gives
  return true;
}

std::int64_t sha1_key(std::string_view name) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!EVP_Digest(name.data(), name.size(), md, &len, EVP_sha1(), nullptr) || len < 8)
    throw backend_error("SHA-1 of a lock name failed");
  std::uint64_t r = 0;
  for (int i = 7; i >= 0; --i) r = (r << 8) | md[i];  // little-endian
  return static_cast<std::int64_t>(r);
}

std::string hex(std::uint64_t v, int digits) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%0*llx", digits, static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

advisory_key distributedlock_key(std::string_view name, bool allow_hashing) {
  advisory_key k;
  if (encode_ascii(name, k.value)) return k;
  std::int32_t a = 0, b = 0;
  const bool separated = name.size() == hex_length + 1 && name[hex_part] == ',';
  if ((separated || name.size() == hex_length) && parse_hex32(name.substr(0, hex_part), a) &&
      parse_hex32(name.substr(name.size() - hex_part), b)) {
    return {combine(a, b), separated};
  }
  if (allow_hashing) return {sha1_key(name), false};
  throw config_error("lock name '" + std::string(name) +
                     "' is none of DistributedLock's key formats: up to 9 ASCII characters, 16 "
                     "hex digits, or XXXXXXXX,XXXXXXXX (8 hex digits each); give "
                     "allow_hashing=true to hash other names as DistributedLock does with "
                     "allowHashing");
}

advisory_key raw_key(std::string_view name) {
  auto parse = [&](std::string_view s, auto& out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size() && !s.empty();
  };
  if (auto comma = name.find(','); comma != std::string_view::npos) {
    std::int32_t a = 0, b = 0;
    if (parse(name.substr(0, comma), a) && parse(name.substr(comma + 1), b))
      return {combine(a, b), true};
  } else if (std::int64_t v = 0; parse(name, v)) {
    return {v, false};
  }
  throw config_error("lock name '" + std::string(name) +
                     "' is not a raw advisory key: give a bigint (\"42\") or two ints "
                     "(\"1,2\")");
}

std::string distributedlock_name(advisory_key k) {
  const auto bits = static_cast<std::uint64_t>(k.value);
  if (k.pair) return hex(bits >> 32, 8) + "," + hex(bits & 0xffffffffu, 8);
  std::string name;
  if (decode_ascii(bits, name)) return name;
  return hex(bits, 16);
}

std::string raw_name(advisory_key k) {
  if (!k.pair) return std::to_string(k.value);
  const auto bits = static_cast<std::uint64_t>(k.value);
  return std::to_string(static_cast<std::int32_t>(bits >> 32)) + "," +
         std::to_string(static_cast<std::int32_t>(bits & 0xffffffffu));
}

}  // namespace sqlock::postgres
