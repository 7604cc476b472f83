// What a lock name must be before it is sent to PostgreSQL: checked on the client, so that a
// bad name is a short config_error and never a server error quoting function source.
#include <cstdint>
#include <string>

#include "errors.hpp"
#include "sqlock/errors.hpp"

namespace sqlock::postgres {

namespace {

// Length of the UTF-8 sequence that starts at s[i], or 0 when it is not well-formed (overlong
// forms, surrogates and code points above U+10FFFF are refused, as PostgreSQL does).
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  auto cont = [&](std::size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  unsigned char c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
    if (c == 0xED && b(1) >= 0xA0) return 0;  // UTF-16 surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;   // overlong
    if (c == 0xF4 && b(1) >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

}  // namespace

void check_name(std::string_view name, const char* what) {
  if (name.size() > max_name_bytes)
    throw config_error(std::string("PostgreSQL ") + what + " is " + std::to_string(name.size()) +
                       " bytes long; at most " + std::to_string(max_name_bytes) +
                       " bytes are allowed");
  for (std::size_t i = 0; i < name.size();) {
    if (name[i] == '\0')
      throw config_error(std::string("PostgreSQL ") + what + " cannot contain NUL bytes");
    auto n = utf8_sequence(name, i);
    if (n == 0)
      throw config_error(std::string("PostgreSQL ") + what + " is not valid UTF-8 (byte " +
                         std::to_string(i) + ")");
    i += n;
  }
}

}  // namespace sqlock::postgres
