// Lock names as znode names: the check every name passes before it is sent, the escape of
// sqlock's own layout and its inverse (see zookeeper_names.hpp).
#include "zookeeper_names.hpp"

#include "sqlock/errors.hpp"
#include "sqlock/url.hpp"
#include "sqlock/zookeeper/zookeeper.hpp"

namespace sqlock::zookeeper::detail {

namespace {

bool plain_char(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == ':' || c == '@' || c == '+' || c == '=' || c == ',' || c == '~' ||
         c == '-';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Length of the well-formed UTF-8 sequence at s[i] (no overlong forms, surrogates or code
// points above U+10FFFF), 0 when there is none.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  unsigned char c = b(0);
  if (c < 0x80) return 1;
  std::size_t n = c >= 0xC2 && c <= 0xDF   ? 2
                  : c >= 0xE0 && c <= 0xEF ? 3
                  : c >= 0xF0 && c <= 0xF4 ? 4
                                           : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((b(k) & 0xC0) != 0x80) return 0;
  if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
  if (c == 0xED && b(1) >= 0xA0) return 0;  // UTF-16 surrogate
  if (c == 0xF0 && b(1) < 0x90) return 0;   // overlong
  if (c == 0xF4 && b(1) >= 0x90) return 0;  // above U+10FFFF
  return n;
}

}  // namespace

void check_name(std::string_view name) {
  if (name.empty()) throw config_error("lock name must not be empty");
  if (name.size() > max_name_bytes)
    throw config_error("lock name of " + std::to_string(name.size()) +
                       " bytes is too long for ZooKeeper (at most " +
                       std::to_string(max_name_bytes) + " bytes)");
  for (std::size_t i = 0; i < name.size();) {
    auto n = utf8_sequence(name, i);
    if (n == 0)
      throw config_error("lock name is not valid UTF-8 (invalid byte at offset " +
                         std::to_string(i) + ")");
    i += n;
  }
}

std::string escape(std::string_view s) {
  bool all_dots = !s.empty() && s.find_first_not_of('.') == std::string_view::npos;
  if (all_dots) return percent_encode(s, [](unsigned char) { return false; });
  return percent_encode(s, plain_char);
}

std::optional<std::string> unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '%') {
      if (i + 2 >= s.size()) return std::nullopt;
      int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (plain_char(c)) {
      out.push_back(static_cast<char>(c));
    } else {
      return std::nullopt;
    }
  }
  return out;
}

}  // namespace sqlock::zookeeper::detail

namespace sqlock::zookeeper {

std::string znode_name(std::string_view name) {
  return detail::escape(name);
}

std::optional<std::string> lock_name(std::string_view znode) {
  if (znode.empty()) return std::nullopt;
  auto n = detail::unescape(znode);
  if (!n || n->empty() || detail::escape(*n) != znode) return std::nullopt;
  return n;
}

}  // namespace sqlock::zookeeper
