// The databases the SOCI backend is built for, as test parameters, and the environment variable
// naming each one's test server. Shared by the SOCI backend's tests and the job scheduler
// example's test (which needs neither SOCI's nor sqlock's headers for this).
#pragma once

#include <string>
#include <vector>

namespace sqlock::test {

/// "sqlite3", then "postgresql" and "mysql" when built with those SOCI backends.
inline std::vector<std::string> soci_databases() {
  std::vector<std::string> v{"sqlite3"};
#ifdef SQLOCK_SOCI_POSTGRESQL
  v.push_back("postgresql");
#endif
#ifdef SQLOCK_SOCI_MYSQL
  v.push_back("mysql");
#endif
  return v;
}

/// The variable holding the native URL of the test server of `db` ("postgresql" or "mysql").
inline const char* server_url_var(const std::string& db) {
  return db == "postgresql" ? "SQLOCK_TEST_POSTGRES_URL" : "SQLOCK_TEST_MYSQL_URL";
}

}  // namespace sqlock::test
