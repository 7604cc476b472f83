// The C++ of docs/backends/postgres.md on the application's own libpqxx transactions: a write
// that checks its fence in the same transaction, and transaction-scoped locks.
//   postgres_xact URL    a postgresql:// URL (no query options: libpq opens it too)
// Built with the PostgreSQL backend; examples.postgres_xact runs it on the test server.
#include <sqlock/client.hpp>
#include <sqlock/postgres/xact_lock.hpp>

#include <iostream>
#include <mutex>
#include <pqxx/pqxx>
#include <string>

namespace {

bool paid = false;
int readers = 0;

void pay_order(sqlock::client& locks, pqxx::connection& app_conn) {
  // begin-snippet: fence-check
  auto l = locks.make_lock("orders:42");
  std::unique_lock g(l);
  pqxx::work tx(app_conn);  // the application's own connection
  auto r =
      tx.exec_params("UPDATE orders SET v = v + 1 WHERE id = 42 AND sqlock.fence_check($1, $2)",
                     "orders:42", static_cast<long long>(l.fence()));
  if (r.affected_rows() == 0)
    tx.abort();  // a stale holder: the lease ran out and somebody else holds the name
  else
    tx.commit();
  // or: if (!sqlock::postgres::fence_check(tx, "orders:42", l.fence())) ...
  // end-snippet
  paid = r.affected_rows() == 1;
}

void read_reports(pqxx::transaction_base&) {
  ++readers;
}

void xact_locks(pqxx::connection& conn) {
  // begin-snippet: xact-lock
  pqxx::work tx(conn);
  tx.exec("SET LOCAL lock_timeout = '5s'");      // bound the wait (else: forever)
  sqlock::postgres::xact_lock(tx, "orders:42");  // waits; backend_error 55P03 on timeout
  if (sqlock::postgres::try_xact_lock(tx, "reports", {.shared = true}))
    read_reports(tx);  // beside other shared holders
  tx.commit();         // releases both
  // end-snippet
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: postgres_xact postgresql://USER:PASSWORD@HOST:PORT/DB\n";
    return 2;
  }
  auto locks = sqlock::connect(std::string(argv[1]) + "?mode=pessimistic");
  pqxx::connection app_conn(argv[1]);
  {
    pqxx::nontransaction tx(app_conn);
    tx.exec("CREATE TEMP TABLE orders (id int PRIMARY KEY, v int)");
    tx.exec("INSERT INTO orders VALUES (42, 0)");
  }
  pay_order(locks, app_conn);
  xact_locks(app_conn);
  std::cout << (paid ? "paid" : "not paid") << ", reports read " << readers << "\n";
  return paid && readers == 1 ? 0 : 1;
}
