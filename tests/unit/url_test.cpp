#include <gtest/gtest.h>

#include "sqlock/errors.hpp"
#include "sqlock/url.hpp"

using namespace sqlock;
using namespace std::chrono_literals;

TEST(url, server_form_with_everything) {
  auto u =
      url::parse("postgresql://app:p%40ss@db.example:6543/orders?mode=advisory&sslmode=require");
  EXPECT_EQ(u.scheme, "postgresql");
  EXPECT_TRUE(u.has_authority);
  EXPECT_EQ(u.user, "app");
  EXPECT_EQ(u.password, "p@ss");
  ASSERT_EQ(u.hosts.size(), 1u);
  EXPECT_EQ(u.hosts[0].host, "db.example");
  EXPECT_EQ(u.hosts[0].port, 6543);
  EXPECT_EQ(u.path, "/orders");
  EXPECT_EQ(u.param("mode"), "advisory");
  EXPECT_EQ(u.param("sslmode"), "require");
  EXPECT_EQ(u.redacted().find("p%40ss"), std::string::npos);
  EXPECT_NE(u.redacted().find("***"), std::string::npos);
}

TEST(url, host_lists_and_ipv6) {
  auto u = url::parse("redlock://127.0.0.1:7001,[::1]:7002,localhost");
  ASSERT_EQ(u.hosts.size(), 3u);
  EXPECT_EQ(u.hosts[1].host, "::1");
  EXPECT_EQ(u.hosts[1].port, 7002);
  EXPECT_EQ(u.hosts[2].port, 0);
}

TEST(url, opaque_forms) {
  auto s = url::parse("sqlite:/var/lib/app/locks.db?mode=optimistic");
  EXPECT_FALSE(s.has_authority);
  EXPECT_EQ(s.path, "/var/lib/app/locks.db");
  EXPECT_EQ(s.param("mode"), "optimistic");
  EXPECT_EQ(url::parse("sqlite:///abs/x.db").path, "/abs/x.db");
  EXPECT_EQ(url::parse("memory:").path, "");
  EXPECT_EQ(url::parse("SOCI+PostgreSQL://h/db").scheme, "soci+postgresql");
}

TEST(url, malformed_input_is_config_error) {
  EXPECT_THROW(url::parse(""), config_error);
  EXPECT_THROW(url::parse("no-colon"), config_error);
  EXPECT_THROW(url::parse(":x"), config_error);
  EXPECT_THROW(url::parse("redis://h:99999"), config_error);
  EXPECT_THROW(url::parse("redis://h:port"), config_error);
  EXPECT_THROW(url::parse("redis://a,,b"), config_error);
  EXPECT_THROW(url::parse("redis://h/%zz"), config_error);
  EXPECT_THROW(url::parse("re dis://h"), config_error);
  EXPECT_THROW(url::parse("redis://h?=v"), config_error);
}

TEST(url, unknown_params_are_named) {
  auto u = url::parse("sqlite:x.db?mdoe=optimistic");
  try {
    u.check_params({"mode"});
    FAIL();
  } catch (const config_error& e) {
    EXPECT_NE(std::string(e.what()).find("mdoe"), std::string::npos);
  }
}

TEST(duration, parses_units) {
  EXPECT_EQ(parse_duration("250ms"), 250ms);
  EXPECT_EQ(parse_duration("30s"), 30s);
  EXPECT_EQ(parse_duration("5m"), 5min);
  EXPECT_EQ(parse_duration("1h"), 1h);
  EXPECT_EQ(parse_duration("1.5s"), 1500ms);
  EXPECT_EQ(parse_duration("7"), 7s);
  EXPECT_EQ(parse_duration("0"), 0ms);
}

TEST(duration, rejects_bad_input) {
  for (const char* bad : {"", "-1s", "abc", "5 parsecs", "1.2.3s", "ms", "1e400h"})
    EXPECT_THROW(parse_duration(bad), config_error) << bad;
}

TEST(url, duration_param_parses_when_present) {
  auto u = url::parse("redis://h?timeout=250ms&bad=soon");
  EXPECT_EQ(u.duration_param("timeout"), std::optional<std::chrono::milliseconds>(250ms));
  EXPECT_EQ(u.duration_param("connect_timeout"), std::nullopt);
  EXPECT_THROW(u.duration_param("bad"), config_error);
}

TEST(percent_encode, with_own_plain_bytes) {
  auto digits = [](unsigned char c) { return c >= '0' && c <= '9'; };
  EXPECT_EQ(percent_encode("a1/\xff", digits), "%611%2F%FF");
  EXPECT_EQ(percent_encode("", digits), "");
  EXPECT_EQ(percent_encode("a b~"), "a%20b~");
}

TEST(format_utc_ms, iso8601_with_milliseconds) {
  EXPECT_EQ(format_utc_ms(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(format_utc_ms(1714564800250), "2024-05-01T12:00:00.250Z");
}

TEST(url, secret_query_parameters_are_redacted) {
  EXPECT_EQ(redact_url("postgresql://db/app?sslmode=require&password=hunter2&mode=advisory"),
            "postgresql://db/app?sslmode=require&password=***&mode=advisory");
  EXPECT_EQ(redact_url("zookeeper://zk:2181/l?auth=digest:u:secret"),
            "zookeeper://zk:2181/l?auth=***");
  EXPECT_EQ(redact_url("mysql://u:pw@db/app?SslPassword=x#frag"),
            "mysql://u:***@db/app?SslPassword=***#frag");
  EXPECT_EQ(redact_url("sqlite:/tmp/a.db?timeout=5s"), "sqlite:/tmp/a.db?timeout=5s");
  EXPECT_EQ(redact_url("etcd://h/?token=&x=1"), "etcd://h/?token=***&x=1");
}

// redact_secrets() is the one mask of every message: URLs anywhere in a text, well-formed or
// not, libpq conninfo, secret parameters; whatever else the text holds stays readable.
TEST(redact_secrets, every_shape_of_password) {
  const std::pair<const char*, const char*> cases[] = {
      {"postgresql://u:hunter2@db/app", "postgresql://u:***@db/app"},
      {"postgresql:/user:hunter2@host/db", "postgresql:/user:***@host/db"},
      {"postgresql:user:hunter2@host/db", "postgresql:user:***@host/db"},
      {"postgresql://u:hunter2@h1:5432,h2:5433/app?target_session_attrs=read-write",
       "postgresql://u:***@h1:5432,h2:5433/app?target_session_attrs=read-write"},
      {"postgresql://u:hunter2@[::1]:5432/app", "postgresql://u:***@[::1]:5432/app"},
      {"mysql://u:p@ss/w?rd@db/app", "mysql://u:***@db/app"},
      {"redis://:hunter2@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"},
      {"bad URL 'postgresql://u:hunter2@db/app': unknown parameter 'x'",
       "bad URL 'postgresql://u:***@db/app': unknown parameter 'x'"},
      {"invalid connection option \"postgresql:/user:hunter2@host/db?client_encoding\"",
       "invalid connection option \"postgresql:/user:***@host/db?client_encoding\""},
      {"host=db user=u password=hunter2 dbname=app", "host=db user=u password=*** dbname=app"},
      {"host=db password = 'hunter 2\\' x' dbname=app", "host=db password = *** dbname=app"},
      {"postgresql://db/app?sslpassword=hunter2&password=hunter3#f",
       "postgresql://db/app?sslpassword=***&password=***#f"},
      {"etcd://h:2379/?token=hunter2 and zookeeper://zk/l?auth=digest:u:hunter3",
       "etcd://h:2379/?token=*** and zookeeper://zk/l?auth=***"},
      {"sqlock: lock 'orders:42' not obtained within 2s (held by web1:7056:make all since "
       "2026-11-26T10:00:00Z)",
       "sqlock: lock 'orders:42' not obtained within 2s (held by web1:7056:make all since "
       "2026-11-26T10:00:00Z)"},
      {"sqlite:/tmp/a.db?timeout=5s", "sqlite:/tmp/a.db?timeout=5s"},
      {"postgresql://db:5432/app", "postgresql://db:5432/app"},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(redact_secrets(in), want) << in;
}
