// The ceiling of the MySQL/MariaDB advisory mode: a raw libmariadb client (no sqlock code on
// the lock path) running `SELECT GET_LOCK(name, 0)` and `SELECT RELEASE_LOCK(name)` (text
// protocol, one round trip each) on one connection for a given time; prints pairs per second.
// Only the URL is read with sqlock's parser. Given two statements instead (`{name}` stands for
// the quoted lock name), it runs those: e.g. sqlock's acquire CALL beside a plain RELEASE_LOCK,
// to see what the stored procedure costs without the library. Usage:
//   sqlock_mysql_get_lock_bench mysql://user:pw@host:port/db [SECONDS [ACQUIRE RELEASE]]
#include <mysql.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "sqlock/url.hpp"

namespace {

// Runs `q` and reads its results (a CALL sends a status after its rows): true when the first
// column of the first row is not NULL and not "0" (a GET_LOCK that got the lock, a fence).
bool says_yes(MYSQL* c, const std::string& q) {
  if (mysql_real_query(c, q.data(), q.size()) != 0) {
    std::fprintf(stderr, "query failed: %s\n", mysql_error(c));
    std::exit(1);
  }
  bool yes = false, first = true;
  do {
    MYSQL_RES* r = mysql_store_result(c);
    if (r == nullptr) continue;
    MYSQL_ROW row = mysql_fetch_row(r);
    if (first) yes = row != nullptr && row[0] != nullptr && std::strcmp(row[0], "0") != 0;
    first = false;
    mysql_free_result(r);
  } while (mysql_next_result(c) == 0);
  return yes;
}

std::string with_name(std::string q, const std::string& name) {
  for (auto at = q.find("{name}"); at != std::string::npos; at = q.find("{name}"))
    q.replace(at, 6, name);
  return q;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc == 4) {
    std::fprintf(stderr, "usage: %s mysql://user:pw@host:port/db [SECONDS [ACQUIRE RELEASE]]\n",
                 argv[0]);
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
                         CLIENT_MULTI_RESULTS) == nullptr) {
    std::fprintf(stderr, "connect to %s failed: %s\n", u.redacted().c_str(), mysql_error(c));
    return 69;
  }
  const std::string name = "'raw-bench-" + std::to_string(mysql_thread_id(c)) + "'";
  const std::string get = with_name(argc > 4 ? argv[3] : "SELECT GET_LOCK({name}, 0)", name);
  const std::string rel = with_name(argc > 4 ? argv[4] : "SELECT RELEASE_LOCK({name})", name);
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const auto end = start + std::chrono::duration<double>(secs);
  long pairs = 0;
  for (auto now = start; now < end; now = clock::now()) {
    if (!says_yes(c, get) || !says_yes(c, rel)) {
      std::fprintf(stderr, "the acquire or the release failed\n");
      return 1;
    }
    ++pairs;
  }
  const double took = std::chrono::duration<double>(clock::now() - start).count();
  std::printf("raw libmariadb %s pairs/s %.0f (%ld pairs in %.2f s)\n",
              argc > 4 ? "given statements" : "GET_LOCK+RELEASE_LOCK",
              static_cast<double>(pairs) / took, pairs, took);
  mysql_close(c);
  return 0;
}
