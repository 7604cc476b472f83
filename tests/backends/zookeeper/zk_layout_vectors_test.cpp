// The peers' ZooKeeper layouts by vectors, with no server: the child names sqlock creates, the
// order a lock's children are read in, and who holds and what a waiter watches, computed from
// the peers' sources:
//   kazoo   kazoo/recipe/lock.py (Lock/WriteLock "__lock__", ReadLock "__rlock__"; contenders
//           match "(__lock__|__rlock__)(-?\d{10})$", ordered by that sequence; a Lock/WriteLock
//           waits for the nearest contender ahead, a ReadLock for the nearest "__lock__" ahead)
//   Curator curator-recipes/.../locks/LockInternals.java (every child, sorted by
//           StandardLockInternalsDriver.fixForSorting: the text after the last lock name),
//           StandardLockInternalsDriver.java (getsTheLock: first, else watch the child just
//           ahead), InterProcessMutex.java (lock name "lock-"), InterProcessReadWriteLock.java
//           ("__READ__"/"__WRIT__"; both names stripped for sorting; a reader holds before the
//           first writer and watches it), CreateBuilderImpl/ProtectedUtils ("_c_" + UUID + "-").
#include <gtest/gtest.h>

#include "sqlock/backend.hpp"
#include "sqlock/errors.hpp"
#include "zookeeper_layout.hpp"

namespace sqlock::zookeeper::detail {
namespace {

using namespace std::chrono_literals;

const std::string owner_token = "0123456789abcdef0123456789abcdef";

lock_request req(lock_kind kind) {
  return {"job", owner_token, 10s, "h", kind, 0};
}

std::vector<std::string> names(const std::vector<queue_node>& q) {
  std::vector<std::string> out;
  for (const auto& n : q) out.push_back(n.znode);
  return out;
}

TEST(zk_layout_vectors, the_lock_named_n_is_the_znode_root_n) {
  auto k = make_layout("kazoo", "/app");
  EXPECT_EQ(k->parent_of("locks/job"), "/app/locks/job");
  EXPECT_EQ(make_layout("curator", "/")->parent_of("job"), "/job");
  EXPECT_EQ(make_layout("", "/sqlock")->parent_of("a/b"), "/sqlock/locks/a%2Fb");
  EXPECT_THROW(k->check_name("a//b"), config_error);
  EXPECT_THROW(k->check_name("../x"), config_error);
  EXPECT_THROW(k->check_name("/abs"), config_error);
  // What ZooKeeper refuses in a path is refused before anything is sent.
  EXPECT_THROW(k->check_name("new\nline"), config_error);
  EXPECT_THROW(k->check_name("lock-\xF0\x9F\x94\x92"), config_error);  // U+1F512
  EXPECT_NO_THROW(k->check_name("\xD0\xBA\xD0\xBB\xD1\x8E\xD1\x87-\xE9\x8D\xB5"));
  EXPECT_THROW(make_layout("zkfarm", "/"), config_error);
}

TEST(zk_layout_vectors, kazoo_child_names_order_and_predecessors) {
  auto k = make_layout("kazoo", "/");
  EXPECT_EQ(k->node_prefix(req(lock_kind::exclusive)), owner_token + "__lock__");
  EXPECT_EQ(k->node_prefix(req(lock_kind::shared)), owner_token + "__rlock__");
  // Ordered by sequence, not by the uuid before it; other children are no contenders.
  auto q = k->sorted({"ffff__lock__0000000007", "aaaa__rlock__0000000005",
                      "bbbb__rlock__0000000006", "cccc__lock__0000000004", "_c_x-lock-0000000001",
                      "dddd__rlock__0000000009", "eeee__lock__-0000000002"});
  EXPECT_EQ(names(q),
            (std::vector<std::string>{"eeee__lock__-0000000002", "cccc__lock__0000000004",
                                      "aaaa__rlock__0000000005", "bbbb__rlock__0000000006",
                                      "ffff__lock__0000000007", "dddd__rlock__0000000009"}));
  EXPECT_EQ(q[1].owner, "cccc");
  EXPECT_EQ(q[2].kind, lock_kind::shared);
  EXPECT_TRUE(k->turn_of(q, 0).holds);
  EXPECT_EQ(k->turn_of(q, 1).watch, "eeee__lock__-0000000002");
  // A reader waits for the nearest writer ahead, a writer for the nearest contender ahead.
  EXPECT_EQ(k->turn_of(q, 2).watch, "cccc__lock__0000000004");
  EXPECT_EQ(k->turn_of(q, 3).watch, "cccc__lock__0000000004");
  EXPECT_EQ(k->turn_of(q, 4).watch, "bbbb__rlock__0000000006");
  EXPECT_EQ(k->turn_of(q, 5).watch, "ffff__lock__0000000007");
  // Readers with no writer ahead hold together.
  auto r = k->sorted({"a__rlock__0000000001", "b__rlock__0000000002", "c__lock__0000000003"});
  EXPECT_TRUE(k->turn_of(r, 0).holds);
  EXPECT_TRUE(k->turn_of(r, 1).holds);
  EXPECT_EQ(k->turn_of(r, 2).watch, "b__rlock__0000000002");
}

TEST(zk_layout_vectors, curator_mutex_child_names_order_and_predecessors) {
  auto c = make_layout("curator", "/");
  EXPECT_FALSE(c->shared());
  EXPECT_EQ(c->node_prefix(req(lock_kind::exclusive)),
            "_c_01234567-89ab-cdef-0123-456789abcdef-lock-");
  // Sorted by the text after the last "lock-": the sequence, whatever the UUID.
  auto q = c->sorted({"_c_ffffffff-0000-0000-0000-000000000000-lock-0000000003",
                      "_c_00000000-0000-0000-0000-000000000000-lock-0000000005",
                      "_c_88888888-0000-0000-0000-000000000000-lock-0000000001"});
  EXPECT_EQ(q[0].znode, "_c_88888888-0000-0000-0000-000000000000-lock-0000000001");
  EXPECT_EQ(q[0].owner, "88888888000000000000000000000000");
  EXPECT_EQ(q[2].znode, "_c_00000000-0000-0000-0000-000000000000-lock-0000000005");
  EXPECT_TRUE(c->turn_of(q, 0).holds);
  EXPECT_EQ(c->turn_of(q, 2).watch, q[1].znode);
  // Curator counts every child: one without "lock-" sorts by its whole name ("zz" after the
  // sequences) and still stands in line.
  auto o = c->sorted({"zz", "_c_88888888-0000-0000-0000-000000000000-lock-0000000001"});
  EXPECT_EQ(o[1].znode, "zz");
  EXPECT_TRUE(o[1].other);
  EXPECT_FALSE(c->turn_of(o, 1).holds);
}

TEST(zk_layout_vectors, curator_read_write_child_names_order_and_predecessors) {
  auto c = make_layout("curator-rw", "/");
  EXPECT_TRUE(c->shared());
  EXPECT_EQ(c->node_prefix(req(lock_kind::exclusive)),
            "_c_01234567-89ab-cdef-0123-456789abcdef-__WRIT__");
  EXPECT_EQ(c->node_prefix(req(lock_kind::shared)),
            "_c_01234567-89ab-cdef-0123-456789abcdef-__READ__");
  const std::string u = "_c_11111111-2222-3333-4444-555555555555-";
  auto q = c->sorted({u + "__READ__0000000004", u + "__WRIT__0000000003", u + "__READ__0000000000",
                      u + "__WRIT__0000000001", u + "__READ__0000000002"});
  EXPECT_EQ(names(q), (std::vector<std::string>{u + "__READ__0000000000", u + "__WRIT__0000000001",
                                                u + "__READ__0000000002", u + "__WRIT__0000000003",
                                                u + "__READ__0000000004"}));
  EXPECT_TRUE(c->turn_of(q, 0).holds);            // a reader, no writer ahead
  EXPECT_EQ(c->turn_of(q, 1).watch, q[0].znode);  // a writer: the child just ahead
  EXPECT_EQ(c->turn_of(q, 2).watch, q[1].znode);  // a reader: the first writer
  EXPECT_EQ(c->turn_of(q, 3).watch, q[2].znode);  // a writer: the reader just ahead
  EXPECT_EQ(c->turn_of(q, 4).watch, q[1].znode);  // the first writer, not the nearest
}

TEST(zk_layout_vectors, a_token_that_is_no_uuid_is_escaped_and_read_back) {
  auto c = make_layout("curator", "/");
  lock_request r = req(lock_kind::exclusive);
  r.owner = "my token";
  const auto prefix = c->node_prefix(r);
  EXPECT_EQ(prefix, "_c_my%20token-lock-");
  auto q = c->sorted({prefix + "0000000042"});
  EXPECT_EQ(q[0].owner, "my token");
  auto k = make_layout("kazoo", "/");
  auto kq = k->sorted({k->node_prefix(r) + "0000000042"});
  EXPECT_EQ(kq[0].owner, "my token");
}

}  // namespace
}  // namespace sqlock::zookeeper::detail
