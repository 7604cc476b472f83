// Many processes connecting with one URL at the same moment, as the replicas of a service
// starting together do: fork()ed children wait on a pipe (the starting gun), each calls
// sqlock::connect(url) once, and the test learns how many succeeded. With `migrate=auto` (or
// SQLite's schema on first use) every one of them migrates the store at once.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "sql/sql_engine.hpp"
#include "sqlock/backend.hpp"
#include "sqlock/client.hpp"
#include "sqlock/errors.hpp"

namespace sqlock::test {

/// Starts `n` processes that connect to `url` at once; how many connected (each failure's
/// message goes to stderr).
inline int connect_in_processes(const std::string& url, int n) {
  int gun[2];
  if (::pipe(gun) != 0) return 0;
  std::vector<pid_t> kids;
  for (int i = 0; i < n; ++i) {
    pid_t pid = ::fork();
    if (pid < 0) break;
    if (pid == 0) {
      ::close(gun[1]);
      char c;
      while (::read(gun[0], &c, 1) > 0) {
      }  // end of file: every writer closed, all start now
      int rc = 0;
      try {
        auto client = sqlock::connect(url);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "connect in process %d failed: %s\n", i, e.what());
        rc = 1;
      }
      std::fflush(stderr);
      ::_exit(rc);
    }
    kids.push_back(pid);
  }
  ::close(gun[0]);
  ::close(gun[1]);
  int ok = 0;
  for (pid_t pid : kids) {
    int status = 0;
    if (::waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0) ++ok;
  }
  return ok;
}

/// "count distinct newest" of the versions recorded in `version_table`, read through a client
/// of `url` (an engine backend).
inline std::string recorded_versions(const std::string& url, const std::string& version_table) {
  auto c = sqlock::connect(url);
  auto* engine = dynamic_cast<sql::engine_backend*>(&c.get_backend());
  if (!engine) throw error("not an engine backend: " + url);
  sql::rows r;
  engine->with_connection([&](sql::connection& conn) {
    r = conn.query("SELECT count(*), count(DISTINCT version), max(version) FROM " + version_table);
  });
  if (r.size() != 1 || r[0].size() != 3) return "?";
  return r[0][0].value_or("NULL") + " " + r[0][1].value_or("NULL") + " " + r[0][2].value_or("NULL");
}

}  // namespace sqlock::test
