// A database and a user of a test's own on the shared MariaDB server, made by the sqlock_dba
// account (SQLOCK_TEST_MYSQL_DBA_URL: CREATE USER, everything on databases named sqlock_t_*)
// and dropped at the end, so that no test changes the shared database or users.
#pragma once

#include <cctype>
#include <memory>
#include <string>

#include "mysql_env.hpp"
#include "sqlock/mysql/mysql.hpp"
#include "sqlock/random.hpp"

namespace sqlock::test {

/// A fresh database (utf8mb4_bin) and, on demand, a user with EXECUTE on it.
class own_database {
 public:
  explicit own_database(const std::string& dba_url) {
    auto o = mysql::parse_url(dba_url);
    server_ = o.host + ":" + std::to_string(o.port);
    dba_ = with_db(o.user, o.password, o.database);
    tag_ = random_token().substr(0, 10);
    for (auto& ch : tag_)
      if (!std::isalnum(static_cast<unsigned char>(ch))) ch = 'x';
    db_ = "sqlock_t_db" + tag_;
    user_ = "sqlock_t_u" + tag_;
    admin_ = raw_backend(dba_);
    query(*admin_, "CREATE DATABASE " + db_ + " CHARACTER SET utf8mb4 COLLATE utf8mb4_bin");
    dba_ = with_db(o.user, o.password, db_);
  }
  ~own_database() {
    try {
      query(*admin_, "DROP USER IF EXISTS '" + user_ + "'@'127.0.0.1'");
      query(*admin_, "DROP DATABASE IF EXISTS " + db_);
    } catch (...) {
    }
  }
  own_database(const own_database&) = delete;
  own_database& operator=(const own_database&) = delete;

  /// The URL of the sqlock_dba account on this database.
  const std::string& dba() const { return dba_; }
  /// Creates the test's user with EXECUTE on this database and `limits` (e.g. "WITH
  /// MAX_STATEMENT_TIME 0.3"); its URL.
  std::string make_user(const std::string& limits) {
    query(*admin_,
          "CREATE USER '" + user_ + "'@'127.0.0.1' IDENTIFIED BY '" + tag_ + "' " + limits);
    // '_' is a wildcard in GRANT's database name: escaped, it names this database only.
    std::string escaped;
    for (char ch : db_) escaped += ch == '_' ? std::string("\\_") : std::string(1, ch);
    query(*admin_, "GRANT EXECUTE ON `" + escaped + "`.* TO '" + user_ + "'@'127.0.0.1'");
    return with_db(user_, tag_, db_);
  }

 private:
  std::string with_db(const std::string& user, const std::string& pw, const std::string& db) {
    return "mysql://" + user + ":" + pw + "@" + server_ + "/" + db;
  }
  std::string server_, dba_, tag_, db_, user_;
  std::shared_ptr<sql::engine_backend> admin_;
};

}  // namespace sqlock::test
