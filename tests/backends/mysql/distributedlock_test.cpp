// compat=distributedlock and compat=raw on MySQL/MariaDB beside a raw session that takes the
// GET_LOCK name as the peer does. The names are vectors computed from DistributedLock's
// algorithm in src/DistributedLock.MySql/MySqlDistributedLock.cs (github.com/madelson/
// DistributedLock): GetSafeName / ToSafeName (a name of 1..64 characters without upper case is
// used as is; else its lower-cased start + 32 base32 characters of SHA-512, ComputeHash), taken
// with GET_LOCK as src/DistributedLock.MySql/MySqlUserLock.cs does.
#include "mysql_env.hpp"

namespace sqlock::test {
namespace {

struct vector_case {
  std::string name, get_lock_name;
};

const vector_case cases[] = {
    {"dl-compat-report", "dl-compat-report"},
    {"DL-Compat-Report", "dl-compat-report3rtpeycd72duaga5fk543zvmuye54ikm"},
    {"dl-compat-" + std::string(60, 'y'),
     "dl-compat-yyyyyyyyyyyyyyyyyyyyyyse72jv5q3tfbekj4dztlru7quqkl2oql"},
};

bool peer(sql::connection& c, const std::string& call) {
  auto r = c.query("SELECT " + call);
  return !r.empty() && sql::truthy(r[0][0]);
}

}  // namespace

TEST(mysql_distributedlock, get_lock_names_are_the_peers_both_ways) {
  std::string u;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_URL", u);
  auto dl = connect(with_param(u, "compat", "distributedlock"));
  auto raw = connect(with_param(u, "compat", "raw"));
  raw_backend(u)->with_connection([&](sql::connection& c) {  // one session: the peer's
    for (const auto& v : cases) {
      SCOPED_TRACE(v.name);
      const auto quoted = "'" + v.get_lock_name + "'";
      auto m = dl.make_lock(v.name);
      ASSERT_TRUE(peer(c, "GET_LOCK(" + quoted + ", 0)"));
      EXPECT_FALSE(m.try_lock());
      EXPECT_FALSE(raw.make_lock(v.get_lock_name).try_lock());  // the exact name, raw
      ASSERT_TRUE(peer(c, "RELEASE_LOCK(" + quoted + ")"));
      ASSERT_TRUE(m.try_lock());
      EXPECT_FALSE(peer(c, "GET_LOCK(" + quoted + ", 0)"));
      EXPECT_THROW((void)m.fence(), unsupported);
      m.unlock();
      EXPECT_TRUE(peer(c, "GET_LOCK(" + quoted + ", 0)"));
      EXPECT_TRUE(peer(c, "RELEASE_LOCK(" + quoted + ")"));
    }
  });
}

// The test server runs with performance_schema on (scripts/servers.d/20-mysql.sh, only the
// metadata-lock instrument): the peer's lock is listed by its name.
TEST(mysql_distributedlock, list_shows_the_peers_locks) {
  std::string u;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_URL", u);
  auto raw = connect(with_param(u, "compat", "raw"));
  const auto name = "dl-compat-list-" + random_token().substr(0, 8);
  raw_backend(u)->with_connection([&](sql::connection& c) {
    ASSERT_TRUE(peer(c, "GET_LOCK('" + name + "', 0)"));
    ASSERT_TRUE(peer(c, "@@performance_schema"))
        << "the test server runs with performance_schema=ON (scripts/servers.d/20-mysql.sh)";
    auto l = raw.list(name);
    ASSERT_EQ(l.size(), 1u);
    EXPECT_EQ(l[0].name, name);
    EXPECT_NE(l[0].holder.find("connection "), std::string::npos) << l[0].holder;
    EXPECT_THROW(raw.make_lock(std::string(65, 'x')).try_lock(), config_error);
    ASSERT_TRUE(peer(c, "RELEASE_LOCK('" + name + "')"));
  });
}

}  // namespace sqlock::test
