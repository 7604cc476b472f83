// Shared by the PostgreSQL test files: server URLs, one migration per test process, the
// fixture with direct libpqxx sessions for checks a DBA would make, a liveness wait.
#pragma once

#include <chrono>
#include <mutex>
#include <pqxx/pqxx>
#include <string>
#include <thread>

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

namespace sqlock::test {

/// Tests on the shared server: the schema owner's and the EXECUTE-only role's URLs.
class postgres : public ::testing::Test {
 protected:
  void SetUp() override {
    SQLOCK_REQUIRE_URL(pg::url_var, owner_);
    SQLOCK_REQUIRE_URL(pg::app_url_var, app_);
    pg::ensure_migrated();
  }

  // A direct session as the schema owner, for what a DBA would look at.
  pqxx::connection dba() { return pqxx::connection(owner_); }

  std::string owner_, app_;
};

/// Drops a test's own schema (and its group role) at the end of the test.
class schema_guard {
 public:
  schema_guard(std::string owner_url, std::string schema)
      : url_(std::move(owner_url)), schema_(std::move(schema)) {}
  ~schema_guard() {
    try {
      pqxx::connection c(url_);
      pqxx::nontransaction tx(c);
      tx.exec("DROP SCHEMA IF EXISTS " + schema_ + " CASCADE");
      tx.exec("DROP ROLE IF EXISTS " + schema_ + "_execute");
    } catch (...) {
    }
  }
  schema_guard(const schema_guard&) = delete;
  schema_guard& operator=(const schema_guard&) = delete;

 private:
  std::string url_, schema_;
};

/// `url` with its user and password replaced.
inline std::string as_user(const std::string& url, const std::string& user, const std::string& pw) {
  auto scheme_end = url.find("://");
  auto at = url.find('@', scheme_end);
  return url.substr(0, scheme_end + 3) + user + ":" + pw + url.substr(at);
}

/// A login role that may call the sqlock routines, created by the schema owner (CREATEROLE)
/// and dropped at the end with its sessions.
class role_guard {
 public:
  role_guard(std::string owner_url, std::string role)
      : url_(std::move(owner_url)), role_(std::move(role)) {
    pqxx::connection c(url_);
    pqxx::nontransaction tx(c);
    tx.exec("CREATE ROLE " + role_ + " LOGIN PASSWORD '" + role_ + "' IN ROLE sqlock_execute");
  }
  ~role_guard() {
    try {
      terminate_sessions();
      pqxx::connection c(url_);
      pqxx::nontransaction tx(c);
      tx.exec("DROP ROLE IF EXISTS " + role_);
    } catch (...) {
    }
  }
  role_guard(const role_guard&) = delete;
  role_guard& operator=(const role_guard&) = delete;

  void set(const std::string& setting, const std::string& value) {
    pqxx::connection c(url_);
    pqxx::nontransaction tx(c);
    tx.exec("ALTER ROLE " + role_ + " SET " + setting + " = '" + value + "'");
  }
  /// Ends every session of the role (waiting up to 5 s for each to go).
  void terminate_sessions() {
    pqxx::connection c(url_);
    pqxx::nontransaction tx(c);
    tx.exec_params(
        "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE usename = $1", role_);
  }
  const std::string& name() const { return role_; }

 private:
  std::string url_, role_;
};

/// Waits (liveness bound only) until `pred` holds.
template <class Pred>
bool eventually(Pred pred, std::chrono::seconds limit = std::chrono::seconds(20)) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pred();
}

}  // namespace sqlock::test
