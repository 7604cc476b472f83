// Shared by the PostgreSQL test files: server URLs, one migration per test process, direct
// libpqxx sessions for checks a DBA would make.
#pragma once

#include <mutex>
#include <pqxx/pqxx>
#include <string>

#include "sqlock/client.hpp"
#include "test_env.hpp"

namespace sqlock::test::pg {

inline constexpr const char* url_var = "SQLOCK_TEST_POSTGRES_URL";
inline constexpr const char* app_url_var = "SQLOCK_TEST_POSTGRES_APP_URL";

/// Applies the migrations once per test process with the owner URL.
inline void ensure_migrated() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto owner = env(url_var);
    if (!owner.empty()) sqlock::connect(owner + "?migrate=auto");
  });
}

/// `base` with extra query parameters.
inline std::string with(const std::string& base, const std::string& params) {
  return base + (base.find('?') == std::string::npos ? "?" : "&") + params;
}

}  // namespace sqlock::test::pg
