// The choice of a ZooKeeper layout, and what the peers' layouts share (see zk_layout.hpp).
#include "zk_layout.hpp"

#include "sqlock/errors.hpp"
#include "zk_names.hpp"

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
  for (unsigned char c : n)
    if (c < 0x20 || c == 0x7F)
      throw config_error("lock name has a control character, which a znode path cannot hold");
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
