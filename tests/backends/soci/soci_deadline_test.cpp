// Time and secrets through SOCI on the server databases: with the path to the server
// blackholed (tests/support/tcp_proxy.hpp: connections stay open, nothing answers) every call
// on a session sqlock opened returns by its deadline (the socket watchdog), the broken session
// is dropped and the next call works once the path is back; a wrong password is an auth_error;
// no password appears in any error or describe(); a name the server cannot store is a
// config_error before anything is sent.
#include <chrono>
#include <thread>

#include "soci_env.hpp"
#include "sqlock/backend.hpp"
#include "sqlock/client.hpp"
#include "sqlock/url.hpp"
#include "tcp_proxy.hpp"

namespace sqlock::test {
namespace {

using namespace std::chrono_literals;

class soci_server_db : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    SQLOCK_REQUIRE_URL(server_url_var(GetParam()), base_);
    base_ = "soci+" + base_;
    ensure_schema(base_);
    auto u = url::parse(base_);
    ASSERT_FALSE(u.hosts.empty());
    host_ = u.hosts[0].host == "localhost" ? "127.0.0.1" : u.hosts[0].host;
    port_ = u.hosts[0].port;
  }
  // The base URL with its host:port replaced by 127.0.0.1:port.
  std::string with_port(int port) const {
    return with_host_port(base_, url::parse(base_).hosts[0].host, port_, port);
  }
  // The base URL with its password replaced by `pw`.
  std::string with_password(const std::string& pw) const {
    auto u = url::parse(base_);
    EXPECT_TRUE(u.password.has_value());
    std::string out = base_;
    auto at = out.find(":" + percent_encode(*u.password) + "@");
    if (at == std::string::npos) at = out.find(":" + *u.password + "@");
    EXPECT_NE(at, std::string::npos);
    auto end = out.find('@', at);
    return out.replace(at + 1, end - at - 1, pw);
  }

  std::string base_, host_;
  int port_ = 0;
};

TEST_P(soci_server_db, every_call_on_a_blackholed_server_returns_by_its_deadline) {
  tcp_proxy proxy(host_, port_);
  auto b = sqlock::soci::open(with_port(proxy.port()));
  b->verify();
  lock_request req{unique_name("soci-blackhole"), random_token(), 30s, "test"};
  auto lease = b->try_acquire(req, soon());
  ASSERT_TRUE(lease);

  proxy.blackhole(true);
  auto d = std::chrono::steady_clock::now() + 1s;
  ends_by(
      d, [&] { b->renew(*lease, 30s, d); }, "renew");
  d = std::chrono::steady_clock::now() + 1s;
  ends_by(
      d, [&] { b->release(*lease, d); }, "release");
  lock_request other{unique_name("soci-blackhole"), random_token(), 30s, "test"};
  d = std::chrono::steady_clock::now() + 1s;
  ends_by(
      d, [&] { b->try_acquire(other, d); }, "try_acquire");

  // Through the client: a bounded wait returns by its deadline whatever the server does.
  client c(b, {});
  auto l = c.make_lock(other.name);
  auto start = std::chrono::steady_clock::now();
  try {
    EXPECT_FALSE(l.try_lock_for(1500ms));
  } catch (const connection_error&) {
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1500ms + deadline_slack);

  // The path is back: the broken sessions were dropped, new ones work.
  proxy.blackhole(false);
  EXPECT_TRUE(b->release(*lease, soon()));
  auto again = b->try_acquire(other, soon());
  ASSERT_TRUE(again);
  EXPECT_TRUE(b->release(*again, soon()));
}

TEST_P(soci_server_db, a_wrong_password_is_an_auth_error_that_does_not_show_it) {
  const std::string secret = "Wr0ngS3cret";
  try {
    sqlock::soci::open(with_password(secret))->verify();
    ADD_FAILURE() << "a wrong password was accepted";
  } catch (const auth_error& e) {
    EXPECT_EQ(std::string(e.what()).find(secret), std::string::npos) << e.what();
  }
}

TEST_P(soci_server_db, passwords_appear_in_no_error_and_no_description) {
  const std::string secret = "Tr0ub4dor";
  auto u = url::parse(base_);
  std::string user = u.user.value_or("u");
  std::string scheme = "soci+" + GetParam();
  for (const std::string& bad :
       {scheme + "://" + user + ":" + secret + "%3@127.0.0.1/db",       // bad escape
        scheme + "://" + user + ":" + secret + "@127.0.0.1:99999/db",   // bad port
        scheme + "://" + user + ":" + secret + "@[::1/db",              // bad host
        scheme + "://" + user + ":" + secret + "@127.0.0.1/db?pool=0",  // bad option
        scheme + "://" + user + ":" + secret + "@127.0.0.1/db?timeout=x"}) {
    try {
      sqlock::soci::open(bad)->verify();
      ADD_FAILURE() << "accepted: " << redact_url(bad);
    } catch (const error& e) {
      EXPECT_EQ(std::string(e.what()).find(secret), std::string::npos) << e.what();
    }
  }
  auto b = sqlock::soci::open(base_);
  ASSERT_TRUE(u.password.has_value());
  EXPECT_EQ(b->describe().find(":" + *u.password + "@"), std::string::npos) << b->describe();
  auto info = sqlock::soci::connect_info_for(with_password(secret));
  EXPECT_NE(info.connection_string.find(secret), std::string::npos);  // it is the driver's input
}

TEST_P(soci_server_db, invalid_utf8_and_over_long_names_are_config_errors) {
  auto c = sqlock::connect(base_);
  std::string too_long(GetParam() == "postgresql" ? 2601 : 65536, 'n');
  for (const std::string& bad : {std::string("bad\xff\xfe"), std::string("nul\0x", 5), too_long}) {
    auto l = c.make_lock(bad);
    EXPECT_THROW(l.try_lock(), config_error);
    EXPECT_THROW(c.force_release(bad), config_error);
  }
  auto ok = c.make_lock(unique_name("ünïcödé"));  // valid UTF-8 is stored verbatim
  EXPECT_TRUE(ok.try_lock());
  ok.unlock();
}

std::vector<std::string> server_databases() {
  std::vector<std::string> v;
  for (const auto& db : soci_databases())
    if (db != "sqlite3") v.push_back(db);
  return v;
}

INSTANTIATE_TEST_SUITE_P(soci, soci_server_db, ::testing::ValuesIn(server_databases()),
                         [](const auto& p) { return p.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(soci_server_db);

}  // namespace
}  // namespace sqlock::test
