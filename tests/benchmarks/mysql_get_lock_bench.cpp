// The ceiling of the MySQL/MariaDB advisory mode: a raw libmariadb client (no sqlock code on
// the lock path) running `SELECT GET_LOCK(name, 0)` and `SELECT RELEASE_LOCK(name)` (text
// protocol, one round trip each) on one connection for a given time; prints pairs per second.
// Only the URL is read with sqlock's parser. Usage:
//   sqlock_mysql_get_lock_bench mysql://user:pw@host:port/db [SECONDS]
#include <mysql.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "sqlock/url.hpp"

namespace {

// Runs `q` and reads its one-row result: true when the first column is "1".
bool says_one(MYSQL* c, const std::string& q) {
  if (mysql_real_query(c, q.data(), q.size()) != 0) {
    std::fprintf(stderr, "query failed: %s\n", mysql_error(c));
    std::exit(1);
  }
  MYSQL_RES* r = mysql_store_result(c);
  if (r == nullptr) {
    std::fprintf(stderr, "no result: %s\n", mysql_error(c));
    std::exit(1);
  }
  MYSQL_ROW row = mysql_fetch_row(r);
  const bool one = row != nullptr && row[0] != nullptr && std::strcmp(row[0], "1") == 0;
  mysql_free_result(r);
  return one;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s mysql://user:pw@host:port/db [SECONDS]\n", argv[0]);
    return 64;
  }
  const auto u = sqlock::url::parse(argv[1]);
  const double secs = argc > 2 ? std::atof(argv[2]) : 5.0;
  const std::string host = u.hosts.empty() ? "127.0.0.1" : u.hosts[0].host;
  const unsigned port = u.hosts.empty() || u.hosts[0].port == 0 ? 3306 : u.hosts[0].port;
  const std::string db = u.path.substr(u.path.find_first_not_of('/'));
  MYSQL* c = mysql_init(nullptr);
  if (mysql_real_connect(c, host.c_str(), u.user.value_or("").c_str(),
                         u.password.value_or("").c_str(), db.c_str(), port, nullptr,
                         0) == nullptr) {
    std::fprintf(stderr, "connect to %s failed: %s\n", u.redacted().c_str(), mysql_error(c));
    return 69;
  }
  const std::string name = "'raw-bench-" + std::to_string(mysql_thread_id(c)) + "'";
  const std::string get = "SELECT GET_LOCK(" + name + ", 0)";
  const std::string rel = "SELECT RELEASE_LOCK(" + name + ")";
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const auto end = start + std::chrono::duration<double>(secs);
  long pairs = 0;
  for (auto now = start; now < end; now = clock::now()) {
    if (!says_one(c, get) || !says_one(c, rel)) {
      std::fprintf(stderr, "GET_LOCK or RELEASE_LOCK did not answer 1\n");
      return 1;
    }
    ++pairs;
  }
  const double took = std::chrono::duration<double>(clock::now() - start).count();
  std::printf("raw C GET_LOCK+RELEASE_LOCK pairs/s %.0f (%ld pairs in %.2f s)\n",
              static_cast<double>(pairs) / took, pairs, took);
  mysql_close(c);
  return 0;
}
