// The request gate of `sqlock serve` (src/cli/serve_guard.cpp): --listen parsing, the token
// comparison, Host and Origin rules. The whole server is tested from outside in tests/cli/serve.sh
// and tests/browser/.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "serve_guard.hpp"
#include "sqlock/errors.hpp"

using namespace sqlock;
using namespace sqlock::cli;

TEST(serve_listen, parses_and_rejects) {
  auto a = listen_address::parse("127.0.0.1:8480");
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 8480);
  EXPECT_EQ(listen_address::parse("[::1]:0").host, "::1");
  EXPECT_EQ(listen_address::parse("localhost:65535").port, 65535);
  EXPECT_EQ(listen_address::parse(":0").host, "127.0.0.1");  // no address = loopback
  EXPECT_EQ(listen_address::parse(":80").port, 80);
  for (auto bad : {"127.0.0.1:99999", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:", "127.0.0.1",
                   ":", ":x", "127.0.0.1:8o", "127.0.0.1: 80"})
    EXPECT_THROW(listen_address::parse(bad), config_error) << bad;
}

TEST(serve_token, equal_only_when_identical) {
  EXPECT_TRUE(tokens_equal("secret", "secret"));
  EXPECT_FALSE(tokens_equal("secreT", "secret"));
  EXPECT_FALSE(tokens_equal("secret1", "secret"));
  EXPECT_FALSE(tokens_equal("secre", "secret"));
  EXPECT_FALSE(tokens_equal("", "secret"));
  EXPECT_FALSE(tokens_equal("", "")) << "no token configured never matches";
}

TEST(serve_token, from_the_environment_when_no_file) {
  ::setenv("SQLOCK_ADMIN_TOKEN", "  from-env \n", 1);
  auto t = load_admin_tokens("");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].name, "admin");
  EXPECT_EQ(t[0].secret, "from-env");
  ::setenv("SQLOCK_ADMIN_TOKEN", "ops@example.com:s3cret", 1);
  t = load_admin_tokens("");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].name, "ops@example.com");
  EXPECT_EQ(t[0].secret, "s3cret");
  ::unsetenv("SQLOCK_ADMIN_TOKEN");
  EXPECT_TRUE(load_admin_tokens("").empty());
  EXPECT_THROW(load_admin_tokens("/nonexistent/token"), config_error);
}

namespace {
// A token file of `text`, read back; the file is removed before returning.
std::vector<admin_token> tokens_of(const std::string& text) {
  auto path = ::testing::TempDir() + "sqlock-tokens-" + std::to_string(::getpid());
  { std::ofstream(path) << text; }
  struct remove_at_exit {
    std::string p;
    ~remove_at_exit() { std::remove(p.c_str()); }
  } cleanup{path};
  return load_admin_tokens(path);
}

// The message of the config_error that loading `text` throws ("" when none).
std::string error_of(const std::string& text) {
  try {
    tokens_of(text);
  } catch (const config_error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(serve_token, a_file_names_each_token) {
  auto t = tokens_of("# the on-call team\n  alice:a-secret  \n\nbob.ops:b:with:colons\n");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].name, "alice");
  EXPECT_EQ(t[0].secret, "a-secret");
  EXPECT_EQ(t[1].name, "bob.ops");
  EXPECT_EQ(t[1].secret, "b:with:colons");
  auto bare = tokens_of("just-a-secret\n");
  ASSERT_EQ(bare.size(), 1u);
  EXPECT_EQ(bare[0].name, "admin");
}

TEST(serve_token, bad_files_are_refused_without_echoing_a_secret) {
  EXPECT_NE(error_of("# nothing\n\n").find("holds no token"), std::string::npos);
  for (auto text :
       {"alice:x1\nalice:x2\n", "alice:same\nbob:same\n", "al ice:x1\n", ":x1\n", "alice:\n"}) {
    auto e = error_of(text);
    EXPECT_NE(e.find("line "), std::string::npos) << text;
    for (auto secret : {"x1", "x2", "same"}) EXPECT_EQ(e.find(secret), std::string::npos) << e;
  }
}

namespace {
request_guard guard(const std::string& listen, bool priv = false) {
  return request_guard(listen_address::parse(listen), {"locks.example", "proxy.example:443"},
                       {{"admin", "tok"}, {"alice", "alices-secret"}}, priv);
}
}  // namespace

TEST(serve_guard, host_must_name_this_server) {
  auto g = guard("127.0.0.1:8480");
  auto read = [&](const char* host) { return g.check(access::read, host, "", "", false); };
  EXPECT_FALSE(read("127.0.0.1:8480"));
  EXPECT_FALSE(read("localhost:8480"));
  EXPECT_FALSE(read("[::1]:8480"));
  EXPECT_FALSE(read("LOCKS.example"));
  EXPECT_FALSE(read("locks.example:9999")) << "an allowed name without a port: any port";
  EXPECT_FALSE(read("proxy.example:443"));
  EXPECT_EQ(read("proxy.example:80")->status, 421);
  EXPECT_EQ(read("evil.example:8480")->status, 421);
  EXPECT_EQ(read("127.0.0.1:8481")->status, 421);
  EXPECT_EQ(read("")->status, 421);
}

TEST(serve_guard, bound_port_replaces_zero) {
  auto g = guard("127.0.0.1:0");
  g.bound_to(41237);
  EXPECT_FALSE(g.check(access::page, "127.0.0.1:41237", "", "", false));
  EXPECT_TRUE(g.check(access::page, "127.0.0.1:0", "", "", false));
}

TEST(serve_guard, changes_need_the_token_and_the_origin) {
  auto g = guard("127.0.0.1:8480");
  const char* host = "127.0.0.1:8480";
  EXPECT_EQ(g.check(access::change, host, "", "", true)->status, 401);
  EXPECT_EQ(g.check(access::change, host, "", "Bearer nope", true)->status, 401);
  EXPECT_EQ(g.check(access::change, host, "", "Basic tok", true)->status, 401);
  EXPECT_FALSE(g.check(access::change, host, "", "Bearer tok", true));
  EXPECT_FALSE(g.check(access::change, host, "http://127.0.0.1:8480", "Bearer tok", true));
  EXPECT_EQ(g.check(access::change, host, "http://evil.example", "Bearer tok", true)->status, 403);
  EXPECT_EQ(g.check(access::change, host, "null", "Bearer tok", true)->status, 403);
  EXPECT_FALSE(
      g.check(access::change, "locks.example", "https://locks.example", "Bearer tok", true));
}

TEST(serve_guard, private_reads_and_no_token) {
  auto open = guard("127.0.0.1:8480");
  auto priv = guard("127.0.0.1:8480", true);
  const char* host = "127.0.0.1:8480";
  EXPECT_FALSE(open.check(access::read, host, "", "", false));
  EXPECT_EQ(priv.check(access::read, host, "", "", false)->status, 401);
  EXPECT_FALSE(priv.check(access::read, host, "", "Bearer tok", false));
  EXPECT_FALSE(priv.check(access::page, host, "", "", false));
  request_guard none(listen_address::parse("127.0.0.1:8480"), {}, {}, false);
  EXPECT_EQ(none.check(access::change, host, "", "Bearer ", true)->status, 403);
  EXPECT_FALSE(none.has_token());
}

TEST(serve_guard, each_token_passes_under_its_own_name) {
  auto g = guard("127.0.0.1:8480");
  const char* host = "127.0.0.1:8480";
  EXPECT_FALSE(g.check(access::change, host, "", "Bearer alices-secret", true));
  EXPECT_EQ(g.actor("Bearer alices-secret"), "alice");
  EXPECT_EQ(g.actor("bearer tok"), "admin");
  EXPECT_EQ(g.actor("Bearer alices-secreT"), std::nullopt);
  EXPECT_EQ(g.actor("Bearer "), std::nullopt);
  EXPECT_EQ(g.actor("alices-secret"), std::nullopt);
}
