// Helpers of the MySQL test programs: URL parameters and a one-time `sqlock migrate` of the
// test schema through the library itself (the path an operator takes).
#pragma once

#include <mutex>
#include <string>

#include "sql/sql_engine.hpp"
#include "sqlock/client.hpp"
#include "sqlock/mysql/mysql.hpp"
#include "test_env.hpp"

namespace sqlock::test {

/// `base` with `key=value` appended to (or replacing nothing in) its query.
inline std::string with_param(const std::string& base, const std::string& key,
                              const std::string& value) {
  return base + (base.find('?') == std::string::npos ? "?" : "&") + key + "=" + value;
}

/// Applies the migrations and routines once per process with the migrating user's URL, when
/// the schema is missing or old. ctest runs test processes in parallel: a server-side GET_LOCK
/// keeps two of them from re-creating procedures under each other.
inline void ensure_mysql_schema(const std::string& base) {
  static std::once_flag once;
  std::call_once(once, [&] {
    register_builtin_backends();
    auto b = make_backend(base);
    auto* e = dynamic_cast<sql::engine_backend*>(b.get());
    if (!e) throw error("mysql backend is not an engine_backend");
    e->with_connection([&](sql::connection& c) {
      c.query("DO GET_LOCK('sqlock-test-migrate', 120)");
      try {
        e->check_schema();
      } catch (const config_error&) {
        e->migrate();
      }
      c.query("DO RELEASE_LOCK('sqlock-test-migrate')");
    });
  });
}

/// A backend made straight from a URL (no schema check): for raw SQL on its pooled connection.
inline std::shared_ptr<sql::engine_backend> raw_backend(const std::string& url) {
  register_builtin_backends();
  auto b = std::dynamic_pointer_cast<sql::engine_backend>(make_backend(url));
  if (!b) throw error("not an engine backend: " + url);
  return b;
}

inline sql::rows query(sql::engine_backend& b, const std::string& text) {
  sql::rows r;
  b.with_connection([&](sql::connection& c) { r = c.query(text); });
  return r;
}

inline void connect_with(const mysql::options& o) {
  mysql::open(o)->verify();
}

inline std::string single(const sql::rows& r) {
  if (r.empty() || r[0].empty() || !r[0][0]) return "NULL";
  return *r[0][0];
}

/// Runs `body` while this process has the database of SQLOCK_TEST_MYSQL_EMPTY_URL to itself:
/// tests that install a schema there, and the one that needs it empty, exclude each other
/// (ctest runs test processes in parallel) with a server-side GET_LOCK.
template <class Body>
void with_empty_database(const std::string& empty_url, Body body) {
  auto guard = raw_backend(empty_url);
  guard->with_connection([&](sql::connection& c) {
    c.query("DO GET_LOCK('sqlock-test-empty-database', 300)");
    try {
      body();
    } catch (...) {
      c.query("DO RELEASE_LOCK('sqlock-test-empty-database')");
      throw;
    }
    c.query("DO RELEASE_LOCK('sqlock-test-empty-database')");
  });
}

/// A test that needs the server: skips without SQLOCK_TEST_MYSQL_URL; the schema is current.
class mysql_server : public ::testing::Test {
 protected:
  void SetUp() override {
    SQLOCK_REQUIRE_URL("SQLOCK_TEST_MYSQL_URL", url_);
    ensure_mysql_schema(url_);
  }
  std::string mode_url(const std::string& mode) const { return with_param(url_, "mode", mode); }
  std::string url_;
};

}  // namespace sqlock::test
