// The C++ of docs/backends/soci.md: lease-based locks over the application's own SOCI pool, and
// a transaction-scoped lock on its own session.
//   soci_locks URL    a soci+sqlite3: URL; examples.soci_locks runs it on SQLite
//   soci_locks --pool CONNINFO    lease_locks() on a PostgreSQL pool of 4 sessions (run by hand)
#include <sqlock/client.hpp>
#include <sqlock/soci/soci.hpp>

#include <soci/postgresql/soci-postgresql.h>
#include <soci/soci.h>
#include <soci/sqlite3/soci-sqlite3.h>
#include <cstddef>
#include <iostream>
#include <mutex>
#include <string>

namespace {

int jobs_run = 0;

void lease_locks(const std::string& conninfo) {
  // begin-snippet: pool
  soci::connection_pool pool(4);
  for (std::size_t i = 0; i < 4; ++i) pool.at(i).open(soci::postgresql, conninfo);
  sqlock::client locks(sqlock::soci::attach(pool));
  auto l = locks.make_lock("orders:42");
  std::unique_lock g(l);
  // end-snippet
}

void run_job(soci::session& sql, int id) {
  // begin-snippet: xact
  soci::transaction tx(sql);
  if (sqlock::soci::try_lock_xact(sql, "job:" + std::to_string(id))) {
    // ... run the job, write its effects ...
    tx.commit();  // the lock ends here (or with the rollback, or when the session dies)
  }
  // end-snippet
  ++jobs_run;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--pool") {  // a PostgreSQL conninfo
    lease_locks(argv[2]);
    return 0;
  }
  if (argc != 2) {
    std::cerr << "usage: soci_locks soci+sqlite3:PATH | soci_locks --pool CONNINFO\n";
    return 2;
  }
  auto ci = sqlock::soci::connect_info_for(argv[1]);
  sqlock::soci::open(argv[1]);  // SQLite: creates the sqlock tables
  soci::session sql(soci::sqlite3, ci.connection_string);
  run_job(sql, 7);
  std::cout << "ran " << jobs_run << " job\n";
}
