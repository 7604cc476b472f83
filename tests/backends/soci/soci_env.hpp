// Shared by the SOCI backend's tests: the databases under test (soci_databases.hpp), the server
// URLs of the native backends' test servers turned into soci+ URLs, and one migration per server
// before any test runs.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "soci_databases.hpp"
#include "sql/sql_engine.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/soci/soci.hpp"
#include "test_env.hpp"

namespace sqlock::test {

/// "soci+" + the URL in `var` ("" when unset).
inline std::string soci_url(const char* var) {
  auto base = env(var);
  return base.empty() ? std::string() : "soci+" + base;
}

/// `u` with a query parameter appended.
inline std::string with_param(const std::string& u, const std::string& kv) {
  return u + (u.find('?') == std::string::npos ? "?" : "&") + kv;
}

/// Creates the sqlock schema on a server unless it is current. ctest runs every test in its own
/// process, two at a time: migrations are serialized by a lock file, and a current schema is
/// never re-installed (re-creating the routines under running tests would break them).
inline void ensure_schema(const std::string& soci_url) {
  int fd = ::open("/tmp/sqlock-test-soci-migrate.lock", O_CREAT | O_RDWR | O_CLOEXEC, 0666);
  if (fd >= 0) ::flock(fd, LOCK_EX);
  try {
    auto b = sqlock::soci::open(soci_url);
    try {
      b->verify();
    } catch (const config_error&) {
      schema_of(*b).migrate();
    }
  } catch (...) {
    if (fd >= 0) ::close(fd);
    throw;
  }
  if (fd >= 0) ::close(fd);
}

/// Runs `fn` (a backend call given `deadline`) and expects it to end by deadline +
/// deadline_slack, throwing connection_error (the server does not answer).
template <class F>
void ends_by(std::chrono::steady_clock::time_point deadline, F fn, const char* what) {
  bool threw = false;
  try {
    fn();
  } catch (const connection_error&) {
    threw = true;
  }
  auto late = std::chrono::steady_clock::now() - deadline;
  EXPECT_LT(late, deadline_slack)
      << what << " returned " << std::chrono::duration_cast<std::chrono::milliseconds>(late).count()
      << " ms after its deadline";
  EXPECT_TRUE(threw) << what << " on a server that does not answer should throw connection_error";
}

}  // namespace sqlock::test
