// Helpers of the MySQL test programs: URL parameters and a one-time `sqlock migrate` of the
// test schema through the library itself (the path an operator takes).
#pragma once

#include <mutex>
#include <string>

#include "sqlock/client.hpp"
#include "sqlock/sql_engine.hpp"

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

}  // namespace sqlock::test
