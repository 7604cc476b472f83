// Transaction-scoped locks on the application's own libpqxx transaction: the lock is
// pg_advisory_xact_lock on sqlock.lock_key(name) (through the sqlock.xact_lock functions, so an
// EXECUTE-only role may use them) and is released by the transaction's commit or rollback,
// never explicitly. Names share the key space of advisory mode: a name locked here excludes
// the same name held by an advisory-mode client, and the reverse.
//
//   pqxx::work tx(conn);
//   sqlock::postgres::xact_lock(tx, "orders:42");            // waits (bounded by lock_timeout)
//   if (!sqlock::postgres::fence_check(tx, "orders:42", fence)) { /* stale holder */ }
//   tx.commit();                                              // releases
//
// Errors are mapped like the backend's: sqlock::connection_error, backend_error (SQLSTATE in
// code(); 55P03 when lock_timeout expired), config_error (bad name or missing schema).
#pragma once

#include <cstdint>
#include <pqxx/transaction_base>
#include <string>
#include <string_view>

#include "sqlock/export.hpp"

namespace sqlock::postgres {

/// Options of a transaction-scoped lock (an aggregate: use designated initialisers).
struct xact_options {
  std::string schema = "sqlock";  ///< schema holding the sqlock functions
  bool shared = false;            ///< shared (read) lock instead of exclusive
};

/// Waits until `name` is locked for the rest of `tx`. Bound the wait with
/// `SET LOCAL lock_timeout = '5s'` in the transaction (then backend_error with code 55P03).
SQLOCK_API void xact_lock(pqxx::transaction_base& tx, std::string_view name,
                          const xact_options& o = {});

/// One attempt: true when `name` is now locked for the rest of `tx`, false when held elsewhere.
SQLOCK_API bool try_xact_lock(pqxx::transaction_base& tx, std::string_view name,
                              const xact_options& o = {});

/// sqlock.fence_check inside `tx`: true when `fence` is the token of the current live hold of
/// `name` (any mode); it then also holds a share lock on that hold until `tx` ends, so no new
/// holder takes over before the protected write commits.
SQLOCK_API bool fence_check(pqxx::transaction_base& tx, std::string_view name, std::uint64_t fence,
                            const std::string& schema = "sqlock");

/// The 64-bit advisory key the server computes for `name` (sqlock.lock_key).
SQLOCK_API std::int64_t lock_key(pqxx::transaction_base& tx, std::string_view name,
                                 const std::string& schema = "sqlock");

}  // namespace sqlock::postgres
