// The kinds of request in one ZooKeeper lock queue (see zookeeper_kinds.hpp), and sqlock's own
// layout made of them (zookeeper_layout.hpp).
#include "zookeeper_kinds.hpp"

#include <zookeeper/zookeeper.h>

#include <algorithm>

#include "core/queue_rule.hpp"
#include "sqlock/zookeeper/zookeeper.hpp"
#include "zookeeper_layout.hpp"
#include "zookeeper_names.hpp"

namespace sqlock::zookeeper::detail {

namespace {

constexpr std::size_t seq_digits = 10;

// The kind and N a child's prefix names, and the prefix's length; nullopt for another prefix.
struct kind_prefix {
  lock_kind kind;
  std::uint32_t permits;
  std::size_t size;
};

std::optional<kind_prefix> prefix_of(std::string_view child) {
  if (child.starts_with("n-")) return kind_prefix{lock_kind::exclusive, 0, 2};
  if (child.starts_with("r-")) return kind_prefix{lock_kind::shared, 0, 2};
  if (!child.starts_with("p")) return std::nullopt;
  std::uint64_t n = 0;
  std::size_t i = 1;
  for (; i < child.size() && child[i] >= '0' && child[i] <= '9' && i <= 10; ++i)
    n = n * 10 + static_cast<std::uint64_t>(child[i] - '0');
  if (i == 1 || i >= child.size() || child[i] != '-' || n == 0 || n > UINT32_MAX)
    return std::nullopt;
  return kind_prefix{lock_kind::permit, static_cast<std::uint32_t>(n), i + 1};
}

}  // namespace

std::optional<queue_node> parse_node(std::string_view child) {
  auto p = prefix_of(child);
  if (!p || child.size() < p->size + 1 + seq_digits) return std::nullopt;
  if (child[child.size() - seq_digits - 1] != '-') return std::nullopt;
  std::int64_t v = 0;
  for (char c : child.substr(child.size() - seq_digits)) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  auto owner = unescape(child.substr(p->size, child.size() - p->size - seq_digits - 1));
  if (!owner) return std::nullopt;
  return queue_node{std::string(child), std::move(*owner), v, p->kind, p->permits};
}

std::vector<queue_node> sorted_queue(const std::vector<std::string>& children) {
  std::vector<queue_node> q;
  for (const auto& c : children)
    if (auto n = parse_node(c)) q.push_back(std::move(*n));
  std::sort(q.begin(), q.end(), [](auto& a, auto& b) { return a.seq < b.seq; });
  return q;
}

std::string node_prefix(const lock_request& req) {
  std::string kind = req.kind == lock_kind::shared   ? "r"
                     : req.kind == lock_kind::permit ? "p" + std::to_string(req.permits)
                                                     : "n";
  return kind + "-" + escape(req.owner) + "-";
}

turn turn_of(const std::vector<queue_node>& q, std::size_t i) {
  const auto s = queue_rule::standing_of(q, i);
  if (s.holds) return {true, {}};
  return {false, s.any_before ? std::string() : q[s.wait_for].znode};
}

void check_permits(const std::vector<queue_node>& q, std::size_t i, const lock_request& req) {
  queue_rule::check_permit_count(q, i, req.kind, req.permits, req.name, "ZooKeeper");
}

namespace {

// sqlock's own layout: <root>/locks/<escaped name>, the kinds above.
class own_layout final : public layout {
 public:
  explicit own_layout(std::string locks) : locks_(std::move(locks)) {}
  std::string name() const override { return {}; }
  void check_name(std::string_view n) const override { detail::check_name(n); }
  std::string parent_of(std::string_view n) const override { return locks_ + "/" + escape(n); }
  std::string base() const override { return locks_; }
  std::optional<std::string> lock_of(std::string_view child) const override {
    return zookeeper::lock_name(child);
  }
  int parent_flags() const override { return ZOO_CONTAINER; }
  std::string node_prefix(const lock_request& req) const override {
    return detail::node_prefix(req);
  }
  std::vector<queue_node> sorted(const std::vector<std::string>& children) const override {
    return sorted_queue(children);
  }
  turn turn_of(const std::vector<queue_node>& q, std::size_t i) const override {
    return detail::turn_of(q, i);
  }
  bool shared() const override { return true; }
  bool permits() const override { return true; }

 private:
  std::string locks_;
};

}  // namespace

std::unique_ptr<layout> native_layout(const std::string& locks_root) {
  return std::make_unique<own_layout>(locks_root);
}

}  // namespace sqlock::zookeeper::detail
