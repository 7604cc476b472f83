// compat=curator and compat=curator-rw: the layouts of Apache Curator's InterProcessMutex and
// InterProcessReadWriteLock (curator-recipes .../locks/LockInternals.java,
// StandardLockInternalsDriver.java, InterProcessReadWriteLock.java). The lock named N is the
// znode <root>/N; a request is the EPHEMERAL_SEQUENTIAL child Curator's "protected" create
// makes, "_c_<uuid>-<lock name><seq>", where sqlock writes its 32-hex-digit owner token as the
// uuid: lock name "lock-" for the mutex, "__WRIT__" (exclusive) and "__READ__" (shared) for the
// read/write lock. Curator reads every child of the lock's znode, sorted by the text after the
// last lock name in it (the whole name when it has none); a writer (or the mutex) holds when
// first and watches the child just ahead; a reader holds when no writer is ahead of it and
// watches the first writer.
#include <zookeeper/zookeeper.h>

#include <algorithm>

#include "zookeeper_layout.hpp"
#include "zookeeper_names.hpp"

namespace sqlock::zookeeper::detail {

namespace {

constexpr std::string_view protected_head = "_c_";
constexpr std::string_view mutex_tag = "lock-";
constexpr std::string_view curator_write_tag = "__WRIT__";
constexpr std::string_view curator_read_tag = "__READ__";

// Curator's sort key of a child: the text after the last `tag` in it, else the child itself.
std::string_view after_last(std::string_view child, std::string_view tag) {
  auto at = child.rfind(tag);
  return at == std::string_view::npos ? child : child.substr(at + tag.size());
}

// A 32-hex-digit token as a UUID's text (8-4-4-4-12), as Java's UUID.toString() writes one;
// any other token escaped.
std::string as_uuid(const std::string& token) {
  const bool hex32 = token.size() == 32 && std::all_of(token.begin(), token.end(), [](char c) {
                       return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
                     });
  if (!hex32) return escape(token);
  return token.substr(0, 8) + "-" + token.substr(8, 4) + "-" + token.substr(12, 4) + "-" +
         token.substr(16, 4) + "-" + token.substr(20);
}

// The owner of a protected child: its UUID without dashes (or the escaped token unescaped);
// "" for a child Curator did not make protected.
std::string owner_of(std::string_view child, std::string_view tag) {
  auto at = child.rfind(tag);
  if (!child.starts_with(protected_head) || at == std::string_view::npos ||
      at < protected_head.size() + 1 || child[at - 1] != '-')
    return {};
  auto head = child.substr(protected_head.size(), at - 1 - protected_head.size());
  if (head.size() == 36 && head[8] == '-' && head[13] == '-' && head[18] == '-' &&
      head[23] == '-') {
    std::string out;
    for (char c : head)
      if (c != '-') out.push_back(c);
    return out;
  }
  return unescape(head).value_or(std::string(head));
}

class curator final : public peer_layout {
 public:
  curator(std::string root, bool rw) : peer_layout(std::move(root)), rw_(rw) {}
  std::string name() const override { return rw_ ? "curator-rw" : "curator"; }
  int parent_flags() const override { return ZOO_CONTAINER; }  // creatingParentContainers...
  std::string node_prefix(const lock_request& req) const override {
    return std::string(protected_head) + as_uuid(req.owner) + "-" + std::string(tag_of(req.kind));
  }
  std::vector<queue_node> sorted(const std::vector<std::string>& children) const override {
    std::vector<std::pair<std::string, queue_node>> keyed;
    for (const auto& c : children) {
      queue_node n;
      n.znode = c;
      std::string_view key = c;
      if (rw_) {
        key = after_last(after_last(key, curator_read_tag), curator_write_tag);
      } else {
        key = after_last(key, mutex_tag);
      }
      auto tag = !rw_                                                    ? mutex_tag
                 : std::string_view(c).find(curator_write_tag) != c.npos ? curator_write_tag
                 : std::string_view(c).find(curator_read_tag) != c.npos  ? curator_read_tag
                                                                         : std::string_view();
      n.other = tag.empty() || std::string_view(c).find(tag) == c.npos;
      n.kind = tag == curator_read_tag ? lock_kind::shared : lock_kind::exclusive;
      if (!n.other) n.owner = owner_of(c, tag);
      if (auto seq = sequence_after(c, tag.empty() ? mutex_tag : tag)) n.seq = *seq;
      keyed.emplace_back(std::string(key), std::move(n));
    }
    std::stable_sort(keyed.begin(), keyed.end(),
                     [](auto& a, auto& b) { return a.first < b.first; });
    std::vector<queue_node> q;
    for (auto& [key, n] : keyed) q.push_back(std::move(n));
    return q;
  }
  turn turn_of(const std::vector<queue_node>& q, std::size_t i) const override {
    if (q[i].kind == lock_kind::shared) {  // InterProcessReadWriteLock's reader predicate
      for (std::size_t j = 0; j < i; ++j)
        if (q[j].kind == lock_kind::exclusive && !q[j].other) return {false, q[j].znode};
      return {true, {}};
    }
    // StandardLockInternalsDriver.getsTheLock with one lease: first, else watch the one ahead.
    if (i == 0) return {true, {}};
    return {false, q[i - 1].znode};
  }
  bool shared() const override { return rw_; }
  bool permits() const override { return false; }
  // Curator sorts by the text after the lock tag, and counts children without one too: a child
  // made later may sort first.
  bool creation_order() const override { return false; }

 private:
  std::string_view tag_of(lock_kind k) const {
    if (!rw_) return mutex_tag;
    return k == lock_kind::shared ? curator_read_tag : curator_write_tag;
  }
  bool rw_;
};

}  // namespace

std::unique_ptr<layout> curator_layout(const std::string& root, bool rw) {
  return std::make_unique<curator>(root, rw);
}

}  // namespace sqlock::zookeeper::detail
