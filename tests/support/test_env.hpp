// Test helpers shared by every test program: server URLs from the environment (skip when
// unset, fail when SQLOCK_TEST_REQUIRE_ALL=1), unique lock names, temporary files.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "sqlock/backend.hpp"
#include "sqlock/client.hpp"
#include "sqlock/random.hpp"

namespace sqlock::test {

/// Past a deadline a call may take this much more in a "returns by its deadline" check (one
/// attempt's allowance, scheduling on a loaded machine, a watchdog's wake-up): a correctness
/// bound, not a speed claim. A call that waited for a frozen server would take far longer.
inline constexpr std::chrono::seconds deadline_slack{2};

/// Options of a client whose single tries check what the locks do, not how long one try may
/// take (the frozen-server and budget tests bound that): one attempt gets 1 s instead of
/// wait_policy::min_attempt's 250 ms. An attempt that must open a connection or session (TCP,
/// SCRAM, the session's settings) does so within that time (docs/design.md); on a loaded
/// two-core machine, and under the sanitizers, 250 ms was sometimes not enough ("cannot connect
/// to PostgreSQL: no answer from the server in time").
inline client_options patient_tries() {
  client_options o;
  o.waiting.min_attempt = std::chrono::seconds(1);
  return o;
}

/// True when SQLOCK_TEST_REQUIRE_ALL=1: a missing server is a failure, not a skip.
inline bool require_all() {
  const char* v = std::getenv("SQLOCK_TEST_REQUIRE_ALL");
  return v && std::string(v) == "1";
}

/// The value of environment variable `var`, or "" when unset/empty.
inline std::string env(const char* var) {
  const char* v = std::getenv(var);
  return v ? std::string(v) : std::string();
}

/// A deadline for a direct backend call in a test: ten seconds from now.
inline std::chrono::steady_clock::time_point soon() {
  return std::chrono::steady_clock::now() + std::chrono::seconds(10);
}

/// A lock name no other test (or earlier run) uses.
inline std::string unique_name(const std::string& stem = "t") {
  return "sqlock-test:" + stem + ":" + random_token().substr(0, 12);
}

/// `url` with the query parameter `kv` ("release=async") added.
inline std::string url_with(const std::string& url, const std::string& kv) {
  return url + (url.find('?') == std::string::npos ? "?" : "&") + kv;
}

/// A fresh temporary directory, removed by the destructor.
struct temp_dir {
  std::filesystem::path path;
  temp_dir() {
    path = std::filesystem::temp_directory_path() / ("sqlock-test-" + random_token().substr(0, 12));
    std::filesystem::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
};

}  // namespace sqlock::test

/// In a fixture's SetUp or a test body: skip (or fail under SQLOCK_TEST_REQUIRE_ALL=1) when the
/// server URL variable `var` is unset; otherwise evaluates to its value.
#define SQLOCK_REQUIRE_URL(var, out)                                \
  do {                                                              \
    out = ::sqlock::test::env(var);                                 \
    if (out.empty()) {                                              \
      if (::sqlock::test::require_all())                            \
        FAIL() << var << " is not set (SQLOCK_TEST_REQUIRE_ALL=1)"; \
      GTEST_SKIP() << var << " is not set";                         \
    }                                                               \
  } while (0)
