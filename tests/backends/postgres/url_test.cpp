// PostgreSQL URLs and connection strings: sqlock's options read (and bad ones refused) without
// a server, libpq's passed through, errors mapped (auth_error), and passwords absent from
// every error and describe().
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "backends/postgres/dialect.hpp"
#include "pg_env.hpp"
#include "sql/sql_engine.hpp"
#include "sqlock/backend.hpp"
#include "sqlock/postgres/postgres.hpp"
#include "sqlock/postgres/xact_lock.hpp"

namespace sqlock::test {
namespace {

using namespace std::chrono_literals;

// ---- URLs ----

TEST(postgres_url, sqlock_parameters_are_taken_and_libpq_ones_passed_through) {
  sqlock::postgres::options o;
  auto ci = sqlock::postgres::parse_url(
      "postgresql://u:p%40ss@db.example:6432/app?sslmode=disable&mode=advisory&schema=locks"
      "&connect_timeout=3&sessions=3&pool=2&migrate=auto&listen=off&timeout=750ms",
      o);
  EXPECT_EQ(o.timeout, 750ms);
  EXPECT_EQ(o.mode, "advisory");
  EXPECT_EQ(o.schema, "locks");
  EXPECT_EQ(o.sessions, 3u);
  EXPECT_EQ(o.pool, std::optional<std::size_t>(2));
  EXPECT_FALSE(o.max_connections);  // 2 + 3 sessions + 2 waiters, the listener being off
  EXPECT_TRUE(o.auto_migrate);
  EXPECT_FALSE(o.listen);
  EXPECT_EQ(ci,
            "postgresql://u:p%40ss@db.example:6432/app?sslmode=disable&connect_timeout=3"
            "&client_encoding=UTF8&fallback_application_name=sqlock");
  sqlock::postgres::options o2;
  EXPECT_EQ(sqlock::postgres::parse_url("postgres:///app", o2),
            "postgres:///app?client_encoding=UTF8&fallback_application_name=sqlock");
  EXPECT_EQ(o2.timeout, 5s);  // the default I/O timeout
}

TEST(postgres_url, bad_urls_are_config_errors_without_a_server) {
  register_builtin_backends();
  for (const char* u :
       {"postgresql://h/db?mode=exclusive", "postgresql://h/db?schema=Bad",
        "postgresql://h/db?schema=pg_x", "postgresql://h/db?no_such_option=1",
        "postgresql://h/db?pool=many", "postgresql://h/db?migrate=maybe", "postgres://h:99999/db",
        "postgresql://h/db?pool=0", "postgresql://h/db?sessions=0", "postgresql://h/db?timeout=0",
        "postgresql://h/db?timeout=soon", "postgresql://h/db?listen=maybe",
        "postgresql://h/db?max_connections=0", "postgresql://h/db?max_connections=1",
        "postgresql://h/db?max_connections=4&pool=4",
        "postgresql://h/db?mode=advisory&max_connections=5",
        "postgresql://h/db?mode=advisory&sessions=6",
        "postgresql://h/db?mode=advisory&waiters=5"}) {
    EXPECT_THROW(make_backend(u), config_error) << u;
  }
  EXPECT_THROW(sqlock::postgres::open("dbname=x", {.pool = 0}), config_error);
  EXPECT_THROW(sqlock::postgres::open("dbname=x", {.sessions = 0}), config_error);
  EXPECT_THROW(sqlock::postgres::open("dbname=x", {.max_connections = 2, .pool = 2}), config_error);
  // What fits: the listener and advisory sessions inside the budget, pool= beside them.
  for (const char* u :
       {"postgresql://h/db?max_connections=2", "postgresql://h/db?max_connections=1&listen=off",
        "postgresql://h/db?mode=advisory&max_connections=6",
        "postgresql://h/db?mode=advisory&sessions=6&waiters=0&listen=off",
        "postgresql://h/db?mode=advisory&sessions=6&pool=40",
        "postgresql://h/db?max_connections=50&pool=49"})
    EXPECT_NO_THROW(make_backend(u)) << u;
  EXPECT_THROW(sqlock::postgres::open("dbname=x", {.timeout = 0ms}), config_error);
  // make_backend() does not connect: printing the script needs no server.
  auto be = make_backend("postgresql://nobody@127.0.0.1:1/none?schema=other");
  auto* eng = dynamic_cast<sql::engine_backend*>(be.get());
  ASSERT_NE(eng, nullptr);
  EXPECT_NE(eng->migration_script().find("other.acquire_advisory"), std::string::npos);
  EXPECT_EQ(be->kind(), "postgresql");
  EXPECT_EQ(be->mode(), "pessimistic");
}

TEST(postgres_url, unreachable_server_is_a_connection_error) {
  EXPECT_THROW(sqlock::connect("postgresql://u@127.0.0.1:1/db?connect_timeout=2"),
               connection_error);
}

// ---- passwords never shown ----

// The password of every URL below: no message, no describe() may contain it.
constexpr const char* secret = "Tr0ub4dor";

void expect_hidden(const std::string& text, const std::string& context) {
  EXPECT_EQ(text.find(secret), std::string::npos) << context << ": " << text;
}

// Runs `fn`, which must throw a sqlock error; checks its message.
template <class Fn>
void expect_error_hides_password(Fn fn, const std::string& context) {
  try {
    fn();
    ADD_FAILURE() << context << ": no error";
  } catch (const error& e) {
    expect_hidden(e.what(), context);
  }
}

TEST(postgres_url, passwords_are_absent_from_every_error_and_description) {
  register_builtin_backends();
  const std::string s = secret;
  // URLs that do not parse, options that are refused, servers that cannot be reached.
  for (const std::string& u :
       {"postgresql://u:" + s + "%3@h/db", "postgresql://u:" + s + "@h:99999/db",
        "postgresql://u:" + s + "@[::1/db", "postgresql://u:" + s + "@h/db?pool=0",
        "postgresql://u:" + s + "@h/db?timeout=never",
        "postgresql://u@h/db?password=" + s + "&sessions=0",
        "postgresql://u@h/db?password=" + s + "&no_such=1",
        "postgresql://u:" + s + "@127.0.0.1:1/db?connect_timeout=1",
        "postgresql://u:" + s + "@no-such-host.invalid/db"}) {
    expect_error_hides_password([&] { sqlock::connect(u); }, u.substr(0, 12));
  }
  // libpq's key=value form: a malformed string, an unreachable server, describe().
  expect_error_hides_password(
      [&] { sqlock::postgres::open("host=127.0.0.1 password='" + s + "' junk"); }, "junk");
  expect_error_hides_password(
      [&] {
        auto b = sqlock::postgres::open("host=127.0.0.1 port=1 user=u dbname=x password=" + s);
        b->verify();
      },
      "unreachable");
  auto b = sqlock::postgres::open("host=127.0.0.1 port=1 user=u password='" + s + "' dbname=x");
  expect_hidden(b->describe(), "describe");
  EXPECT_NE(b->describe().find("password=***"), std::string::npos) << b->describe();
  auto u = make_backend("postgresql://u:" + s + "@127.0.0.1:1/db?password=" + s);
  expect_hidden(u->describe(), "describe");
}

// The URL with its password replaced by `password`.
std::string with_password(const std::string& url, const std::string& password) {
  auto at = url.find('@');
  auto colon = url.rfind(':', at);
  return url.substr(0, colon + 1) + password + url.substr(at);
}

TEST_F(postgres, refused_credentials_are_an_auth_error_without_the_password) {
  auto bad = with_password(owner_, secret);
  for (const char* mode : {"pessimistic", "advisory"}) {
    try {
      sqlock::connect(pg::with(bad, std::string("mode=") + mode));
      ADD_FAILURE() << "connected with a wrong password";
    } catch (const auth_error& e) {
      expect_hidden(e.what(), mode);
    }
  }
  auto unknown = owner_;
  unknown.replace(unknown.find("sqlock_owner"), 12, "no_such_role");
  EXPECT_THROW(sqlock::connect(with_password(unknown, secret)), auth_error);
}

}  // namespace
}  // namespace sqlock::test
