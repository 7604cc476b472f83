// compat=kazoo: the layout of kazoo's Lock, ReadLock and WriteLock (kazoo/recipe/lock.py). The
// lock named N is the znode <root>/N; a request is the EPHEMERAL_SEQUENTIAL child
// "<owner>__lock__<seq>" (exclusive: kazoo's Lock and WriteLock name theirs so, with a uuid4
// hex where sqlock puts its 32-hex-digit owner token) or "<owner>__rlock__<seq>" (shared, as
// ReadLock). kazoo counts as contenders the children ending in one of its names and ten digits,
// ordered by that sequence, and ignores every other child; a WriteLock counts both names, a
// ReadLock only "__lock__", and each waits for its nearest contender ahead. A sqlock exclusive
// request counts both (as WriteLock: it excludes readers too), a shared one only writers.
#include <zookeeper/zookeeper.h>

#include <algorithm>

#include "zookeeper_layout.hpp"
#include "zookeeper_names.hpp"

namespace sqlock::zookeeper::detail {

namespace {

constexpr std::string_view kazoo_write_tag = "__lock__";
constexpr std::string_view kazoo_read_tag = "__rlock__";

class kazoo final : public peer_layout {
 public:
  using peer_layout::peer_layout;
  std::string name() const override { return "kazoo"; }
  int parent_flags() const override { return ZOO_PERSISTENT; }  // kazoo's ensure_path
  std::string node_prefix(const lock_request& req) const override {
    return escape(req.owner) +
           std::string(req.kind == lock_kind::shared ? kazoo_read_tag : kazoo_write_tag);
  }
  std::vector<queue_node> sorted(const std::vector<std::string>& children) const override {
    std::vector<queue_node> q;
    for (const auto& c : children) {
      for (auto tag : {kazoo_write_tag, kazoo_read_tag}) {
        auto seq = sequence_after(c, tag);
        if (!seq) continue;
        const auto head = std::string_view(c).substr(0, c.rfind(tag));
        queue_node n;
        n.znode = c;
        n.owner = unescape(head).value_or(std::string(head));
        n.seq = *seq;
        n.kind = tag == kazoo_read_tag ? lock_kind::shared : lock_kind::exclusive;
        q.push_back(std::move(n));
        break;
      }
    }
    std::sort(q.begin(), q.end(), [](auto& a, auto& b) { return a.seq < b.seq; });
    return q;
  }
  // An exclusive node holds first of all contenders and watches the one just ahead; a shared
  // node holds with no writer ahead and watches the nearest writer ahead: sqlock's own rule
  // for these two kinds (zookeeper_kinds.cpp).
  turn turn_of(const std::vector<queue_node>& q, std::size_t i) const override {
    return detail::turn_of(q, i);
  }
  bool shared() const override { return true; }
  bool permits() const override { return false; }
};

}  // namespace

std::unique_ptr<layout> kazoo_layout(const std::string& root) {
  return std::make_unique<kazoo>(root);
}

}  // namespace sqlock::zookeeper::detail
