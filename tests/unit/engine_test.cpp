// Unit tests of the SQL engine parts that need no server: parameters, the statement compiler,
// migration file versions, the row decoders.
#include <gtest/gtest.h>

#include "sql/bundle.hpp"
#include "sql/params.hpp"
#include "sql/rows.hpp"
#include "sql/statements.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/random.hpp"

using namespace sqlock;
using namespace sqlock::sql;

TEST(compile, dollar_style_reuses_numbers) {
  auto c = compile("SELECT * FROM s.acquire(:name, :owner, :lease_ms) WHERE x = :name",
                   placeholder::dollar);
  EXPECT_EQ(c.text, "SELECT * FROM s.acquire($1, $2, $3) WHERE x = $1");
  EXPECT_EQ(c.names, (std::vector<std::string>{"name", "owner", "lease_ms"}));
}

TEST(compile, question_style_repeats) {
  auto c = compile("CALL sqlock_acquire(:name, :owner, :name)", placeholder::question);
  EXPECT_EQ(c.text, "CALL sqlock_acquire(?, ?, ?)");
  EXPECT_EQ(c.names, (std::vector<std::string>{"name", "owner", "name"}));
}

TEST(compile, skips_literals_comments_and_casts) {
  auto c = compile("SELECT ':not' , \":nor\", x::text, `:no` -- :none\n, :yes /* :never */",
                   placeholder::dollar);
  EXPECT_EQ(c.names, (std::vector<std::string>{"yes"}));
  EXPECT_NE(c.text.find("x::text"), std::string::npos);
  EXPECT_NE(c.text.find("':not'"), std::string::npos);
}

TEST(engine, lookup_rejects_unknown_parameters) {
  params p;
  p.name = "n";
  p.lease_ms = 5;
  EXPECT_EQ(lookup(p, "name").s, "n");
  EXPECT_EQ(lookup(p, "lease_ms").i, 5);
  EXPECT_THROW(lookup(p, "bogus"), config_error);
}

TEST(engine, migration_versions) {
  EXPECT_EQ(migration_version("V001__locks.sql"), 1);
  EXPECT_EQ(migration_version("V012__x.sql"), 12);
  EXPECT_THROW(migration_version("locks.sql"), config_error);
  EXPECT_THROW(migration_version("V1_x.sql"), config_error);
}

TEST(engine, truthy) {
  EXPECT_TRUE(truthy(std::string("t")));
  EXPECT_TRUE(truthy(std::string("1")));
  EXPECT_TRUE(truthy(std::string("TRUE")));
  EXPECT_FALSE(truthy(std::string("0")));
  EXPECT_FALSE(truthy(std::string("f")));
  EXPECT_FALSE(truthy(std::nullopt));
}

TEST(random, tokens_are_128_bit_hex_and_distinct) {
  auto a = random_token(), b = random_token();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(random, backoff_stays_within_cap) {
  using std::chrono::milliseconds;
  for (unsigned attempt = 0; attempt < 40; ++attempt) {
    auto d = backoff_delay(attempt, milliseconds(2), milliseconds(100));
    EXPECT_GE(d.count(), 1);
    EXPECT_LE(d.count(), 100);
  }
}
