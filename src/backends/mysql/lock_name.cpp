// The client's copy of sqlock_lock_name() (see lock_name.hpp).
#include "lock_name.hpp"

#include <algorithm>

#include "sql/sha256.hpp"

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
  const auto md = sha256_of_name(name);
  static constexpr char hex[] = "0123456789abcdef";
  std::string out = "sqlock#";
  for (std::size_t i = 0; i < md.size() && out.size() < 7 + readable_max; ++i) {
    out.push_back(hex[md[i] >> 4]);
    if (out.size() < 7 + readable_max) out.push_back(hex[md[i] & 0xF]);
  }
  return out;
}

}  // namespace sqlock::mysql::detail
