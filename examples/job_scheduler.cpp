// A transactional job scheduler on sqlock's SOCI backend: several worker processes claim jobs
// from a table of the application's own database; each job is claimed, locked (a
// transaction-scoped lock on "job:<table>:<id>"), run and marked done in ONE transaction of
// the worker's own soci::session. A worker that dies mid-transaction leaves nothing behind: its
// transaction rolls back, which also releases the lock, and another worker runs the job. The
// job's effect (a row in <table>_runs) commits with the "done" mark or not at all, so no job
// ever runs twice.
//
//   job_scheduler init  URL TABLE JOBS        create TABLE with JOBS pending jobs (+ sqlock schema)
//   job_scheduler work  URL TABLE [CRASH_PERCENT [SEED]]
//                                             run jobs until none is pending; with CRASH_PERCENT,
//                                             die by SIGKILL after running a job, before commit
//   job_scheduler check URL TABLE             exit 0 when every job ran exactly once
//   job_scheduler drop  URL TABLE             drop the example's tables
//
// URL: soci+sqlite3:/path/app.db, soci+postgresql://..., soci+mysql://...
#include <signal.h>
#include <soci/soci.h>
#include <soci/sqlite3/soci-sqlite3.h>
#include <unistd.h>

#ifdef SQLOCK_SOCI_POSTGRESQL
#include <soci/postgresql/soci-postgresql.h>
#endif
#ifdef SQLOCK_SOCI_MYSQL
#include <soci/mysql/soci-mysql.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <thread>

#include "sqlock/errors.hpp"
#include "sqlock/soci/soci.hpp"

namespace {

std::unique_ptr<soci::session> open_session(const std::string& url) {
  auto ci = sqlock::soci::connect_info_for(url);
  if (ci.backend == "sqlite3")
    return std::make_unique<soci::session>(soci::sqlite3, ci.connection_string + " timeout=10");
#ifdef SQLOCK_SOCI_POSTGRESQL
  if (ci.backend == "postgresql")
    return std::make_unique<soci::session>(soci::postgresql, ci.connection_string);
#endif
#ifdef SQLOCK_SOCI_MYSQL
  if (ci.backend == "mysql")
    return std::make_unique<soci::session>(soci::mysql, ci.connection_string);
#endif
  throw std::runtime_error("this example was built without SOCI " + ci.backend);
}

bool is_sqlite(const std::string& url) {
  return url.rfind("soci+sqlite3:", 0) == 0;
}

int init(const std::string& url, const std::string& table, int jobs) {
  // The sqlock schema: a no-op when current (SQLite creates it on open).
  auto backend = sqlock::soci::open(url);
  try {
    backend->verify();
  } catch (const sqlock::config_error&) {
    auto s = open_session(url);
    sqlock::soci::migrate(*s);
  }
  auto s = open_session(url);
  *s << "DROP TABLE IF EXISTS " + table + "_runs";
  *s << "DROP TABLE IF EXISTS " + table;
  *s << "CREATE TABLE " + table +
            " (id INTEGER PRIMARY KEY, state VARCHAR(16) NOT NULL, worker VARCHAR(64) NOT NULL)";
  *s << "CREATE TABLE " + table + "_runs (job_id INTEGER NOT NULL, worker VARCHAR(64) NOT NULL)";
  soci::transaction tx(*s);
  for (int id = 1; id <= jobs; ++id)
    *s << "INSERT INTO " + table + " (id, state, worker) VALUES (:id, 'pending', '')",
        soci::use(id);
  tx.commit();
  return 0;
}

int work(const std::string& url, const std::string& table, int crash_percent, unsigned seed) {
  auto s = open_session(url);
  std::mt19937 rng(seed ? seed : static_cast<unsigned>(::getpid()));
  const std::string me = "worker-" + std::to_string(::getpid());
  // SQLite has one writer: take it up front (a deferred transaction could not claim later).
  const std::string begin = is_sqlite(url) ? "BEGIN IMMEDIATE" : "BEGIN";
  // Under the job's lock, re-read its state with a locking read (it sees the latest commit).
  const std::string recheck =
      "SELECT state FROM " + table + " WHERE id = :id" + (is_sqlite(url) ? "" : " FOR UPDATE");
  int ran = 0;
  for (;;) {
    int claimed = 0;
    try {
      *s << begin;
      std::vector<int> ids(20);
      *s << "SELECT id FROM " + table + " WHERE state = 'pending' ORDER BY id", soci::into(ids);
      if (ids.empty()) {
        *s << "ROLLBACK";
        std::cout << me << " ran " << ran << " jobs, none pending\n";
        return 0;
      }
      std::shuffle(ids.begin(), ids.end(), rng);  // spread workers over the jobs
      for (int id : ids) {
        if (!sqlock::soci::try_lock_xact(*s, "job:" + table + ":" + std::to_string(id))) continue;
        std::string state;
        *s << recheck, soci::use(id), soci::into(state);
        if (state == "pending") {
          claimed = id;
          break;
        }
      }
      if (!claimed) {
        *s << "ROLLBACK";
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      // Run the job: its effect is written in the same transaction.
      *s << "INSERT INTO " + table + "_runs (job_id, worker) VALUES (:id, :w)", soci::use(claimed),
          soci::use(me);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      if (crash_percent > 0 && static_cast<int>(rng() % 100) < crash_percent) {
        std::cout << me << " dies while running job " << claimed << std::endl;
        ::kill(::getpid(), SIGKILL);  // mid-transaction: no commit, no rollback, no cleanup
      }
      *s << "UPDATE " + table + " SET state = 'done', worker = :w WHERE id = :id", soci::use(me),
          soci::use(claimed);
      *s << "COMMIT";
      ++ran;
    } catch (const std::exception& e) {
      // Deadlock victim, serialization failure, lost connection: give the job back and retry.
      std::cerr << me << ": " << e.what() << "; retrying\n";
      try {
        *s << "ROLLBACK";
      } catch (...) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

int check(const std::string& url, const std::string& table) {
  auto s = open_session(url);
  int jobs = 0, done = 0, runs = 0, twice = 0;
  *s << "SELECT COUNT(*) FROM " + table, soci::into(jobs);
  *s << "SELECT COUNT(*) FROM " + table + " WHERE state = 'done'", soci::into(done);
  *s << "SELECT COUNT(*) FROM " + table + "_runs", soci::into(runs);
  *s << "SELECT COUNT(*) FROM (SELECT job_id FROM " + table +
            "_runs GROUP BY job_id HAVING COUNT(*) > 1) t",
      soci::into(twice);
  std::cout << "jobs " << jobs << " done " << done << " runs " << runs << " run-twice " << twice
            << "\n";
  return jobs > 0 && done == jobs && runs == jobs && twice == 0 ? 0 : 1;
}

int drop(const std::string& url, const std::string& table) {
  auto s = open_session(url);
  *s << "DROP TABLE IF EXISTS " + table + "_runs";
  *s << "DROP TABLE IF EXISTS " + table;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string cmd = argc > 1 ? argv[1] : "";
  try {
    if (cmd == "init" && argc == 5) return init(argv[2], argv[3], std::atoi(argv[4]));
    if (cmd == "work" && argc >= 4 && argc <= 6)
      return work(argv[2], argv[3], argc > 4 ? std::atoi(argv[4]) : 0,
                  argc > 5 ? static_cast<unsigned>(std::atoi(argv[5])) : 0u);
    if (cmd == "check" && argc == 4) return check(argv[2], argv[3]);
    if (cmd == "drop" && argc == 4) return drop(argv[2], argv[3]);
  } catch (const std::exception& e) {
    std::cerr << "job_scheduler: " << e.what() << "\n";
    return 2;
  }
  std::cerr << "usage: job_scheduler init URL TABLE JOBS | work URL TABLE [CRASH_PERCENT [SEED]]"
               " | check URL TABLE | drop URL TABLE\n";
  return 2;
}
