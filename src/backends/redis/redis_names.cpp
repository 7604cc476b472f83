// Lock names of the Redis backend: which names are accepted (valid UTF-8, at most 4096 bytes;
// every valid name is kept verbatim) and how a name maps to its keys and release channel (the
// escaped name inside a {hash tag}, so a lock's keys share one slot and no name can reach
// outside the key prefix), and back from a key list() finds.
#include <string>

#include "redis_lua.hpp"
#include "redis_names.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/redis/redis.hpp"
#include "sqlock/url.hpp"

namespace sqlock::redis {

// ---- key mapping ----

namespace {
bool needs_escape(unsigned char ch) {
  return ch < 0x20 || ch == 0x7f || ch == '{' || ch == '}' || ch == '%' || ch == '*' || ch == '?' ||
         ch == '[' || ch == ']' || ch == '\\';
}

std::string key_of(std::string_view prefix, std::string_view name, std::string_view suffix) {
  std::string k(prefix);
  k += ":{";
  k += encode_name(name);
  k += "}:";
  k += suffix;
  return k;
}
}  // namespace

std::string encode_name(std::string_view name) {
  return percent_encode(name, [](unsigned char ch) { return !needs_escape(ch); });
}

std::string decode_name(std::string_view encoded) {
  try {
    return percent_decode(encoded);
  } catch (const config_error&) {
    throw config_error("malformed escaped lock name in a Redis key");
  }
}

std::string owner_key(std::string_view prefix, std::string_view name) {
  return key_of(prefix, name, "owner");
}
std::string fence_key(std::string_view prefix, std::string_view name) {
  return key_of(prefix, name, "fence");
}
std::string info_key(std::string_view prefix, std::string_view name) {
  return key_of(prefix, name, "info");
}
std::string release_channel(std::string_view prefix, std::string_view name) {
  return key_of(prefix, name, "released");
}

namespace detail {

std::string holders_key(std::string_view prefix, std::string_view name) {
  return key_of(prefix, name, "holders");
}
std::string hinfo_key(std::string_view prefix, std::string_view name) {
  return key_of(prefix, name, "hinfo");
}
std::string meta_key(std::string_view prefix, std::string_view name) {
  return key_of(prefix, name, "meta");
}

// The lock a key of ours belongs to, if it is an owner or holders key. A key whose name is not
// escaped as encode_name() escapes it ("{a%2Fb}" for "a/b") is not one of ours: its lock's own
// key is another, and listing both would show the lock twice.
std::optional<found> lock_of(const std::string& key, const std::string& head) {
  if (key.compare(0, head.size(), head) != 0) return std::nullopt;
  auto close = key.find("}:", head.size());
  if (close == std::string::npos) return std::nullopt;
  const auto suffix = key.substr(close + 2);
  if (suffix != "owner" && suffix != "holders") return std::nullopt;
  const auto encoded = key.substr(head.size(), close - head.size());
  try {
    auto name = decode_name(encoded);
    if (encode_name(name) != encoded) return std::nullopt;
    return found{std::move(name), suffix == "owner"};
  } catch (const config_error&) {
    return std::nullopt;  // not one of ours
  }
}

namespace {

// Longest lock name accepted (bytes; its escaped key may be up to three times longer).
constexpr std::size_t max_name_bytes = 4096;

bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = c < 0x80           ? 1
                      : (c >> 5) == 0x6  ? 2
                      : (c >> 4) == 0xe  ? 3
                      : (c >> 3) == 0x1e ? 4
                                         : 0;
    if (len == 0 || i + len > s.size() || (len == 2 && c < 0xc2)) return false;
    std::uint32_t cp = len == 1 ? c : c & (0x7f >> len);
    for (std::size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    i += len;
  }
  return true;
}

}  // namespace

// Redis keys are binary-safe, so every valid name is kept verbatim (escaped in the key).
void check_lock_name(std::string_view name) {
  if (name.empty()) throw config_error("lock name must not be empty");
  if (name.size() > max_name_bytes)
    throw config_error("lock name is " + std::to_string(name.size()) +
                       " bytes; Redis lock names may have at most " +
                       std::to_string(max_name_bytes));
  if (!valid_utf8(name)) throw config_error("lock name is not valid UTF-8");
}

}  // namespace detail

const lua::script& lua::get(std::string_view name) {
  for (const auto& s : all())
    if (s.name == name) return s;
  throw error("sqlock redis: embedded script " + std::string(name) + " is missing");
}

}  // namespace sqlock::redis
