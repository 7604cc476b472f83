// The choice of a ZooKeeper layout, and what the peers' layouts share (see zookeeper_layout.hpp).
#include "zookeeper_layout.hpp"

#include <cstdio>

#include "sqlock/errors.hpp"
#include "zookeeper_names.hpp"

namespace sqlock::zookeeper::detail {

const std::vector<std::string>& compat_values() {
  static const std::vector<std::string> v{"kazoo", "curator", "curator-rw"};
  return v;
}

std::unique_ptr<layout> make_layout(const std::string& compat, const std::string& root) {
  if (compat.empty()) return native_layout((root == "/" ? std::string() : root) + "/locks");
  if (compat == "kazoo") return kazoo_layout(root);
  if (compat == "curator") return curator_layout(root, false);
  if (compat == "curator-rw") return curator_layout(root, true);
  std::string valid;
  for (const auto& v : compat_values()) valid += (valid.empty() ? "" : ", ") + v;
  throw config_error("ZooKeeper compat='" + compat + "' is not a layout (valid: " + valid + ")");
}

void peer_layout::check_name(std::string_view n) const {
  detail::check_name(n);  // non-empty, UTF-8, not over-long
  std::size_t i = 0;
  while (i <= n.size()) {
    auto j = n.find('/', i);
    if (j == std::string_view::npos) j = n.size();
    const auto part = n.substr(i, j - i);
    if (part.empty() || part == "." || part == "..")
      throw config_error("lock name '" + std::string(n) +
                         "' is no relative znode path (an empty, '.' or '..' component)");
    i = j + 1;
  }
  // What ZooKeeper refuses in a path (its PathUtils.validatePath, on UTF-16 units): control
  // characters, U+007F-U+009F, surrogates (every character beyond U+FFFF), U+E000-U+F8FF and
  // U+FFF0-U+FFFF.
  for (std::size_t at = 0; at < n.size();) {
    const auto b = static_cast<unsigned char>(n[at]);
    std::size_t len = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    char32_t cp = len == 1 ? b : len == 2 ? b & 0x1F : len == 3 ? b & 0x0F : b & 0x07;
    for (std::size_t k = 1; k < len; ++k)
      cp = (cp << 6) | (static_cast<unsigned char>(n[at + k]) & 0x3F);
    if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || (cp >= 0xE000 && cp <= 0xF8FF) || cp >= 0xFFF0) {
      char hex[16];
      std::snprintf(hex, sizeof hex, "U+%04X", static_cast<unsigned>(cp));
      throw config_error("lock name has a character a znode path cannot hold (" + std::string(hex) +
                         " at byte " + std::to_string(at) + ")");
    }
    at += len;
  }
}

std::string peer_layout::parent_of(std::string_view lock_name) const {
  return (root_ == "/" ? std::string() : root_) + "/" + std::string(lock_name);
}

std::optional<std::int64_t> peer_layout::sequence_after(std::string_view child,
                                                        std::string_view tag) {
  constexpr std::size_t digits = 10;
  if (child.size() < tag.size() + digits) return std::nullopt;
  std::size_t at = child.size() - digits;
  bool negative = at > tag.size() && child[at - 1] == '-' &&
                  child.substr(at - 1 - tag.size(), tag.size()) == tag;
  if (negative) --at;
  if (child.substr(at - tag.size(), tag.size()) != tag) return std::nullopt;
  std::int64_t v = 0;
  for (char c : child.substr(child.size() - digits)) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return negative ? -v : v;
}

}  // namespace sqlock::zookeeper::detail
