// Transaction-scoped locks and fence checks on the application's own libpqxx transaction.
#include "sqlock/postgres/xact_lock.hpp"

#include <pqxx/pqxx>

#include "dialect.hpp"
#include "errors.hpp"
#include "sqlock/errors.hpp"

namespace sqlock::postgres {

namespace {

std::string checked_name(std::string_view name) {
  if (name.empty()) throw config_error("lock name must not be empty");
  check_name(name);
  return std::string(name);
}

}  // namespace

void xact_lock(pqxx::transaction_base& tx, std::string_view name, const xact_options& o) {
  check_schema_name(o.schema);
  auto n = checked_name(name);
  try {
    tx.exec_params("SELECT " + o.schema + ".xact_lock($1, $2)", n, o.shared);
  } catch (...) {
    rethrow_mapped("sqlock xact_lock failed");
  }
}

bool try_xact_lock(pqxx::transaction_base& tx, std::string_view name, const xact_options& o) {
  check_schema_name(o.schema);
  auto n = checked_name(name);
  try {
    auto r = tx.exec_params1("SELECT " + o.schema + ".try_xact_lock($1, $2)", n, o.shared);
    return r[0].as<bool>();
  } catch (...) {
    rethrow_mapped("sqlock try_xact_lock failed");
  }
}

bool fence_check(pqxx::transaction_base& tx, std::string_view name, std::uint64_t fence,
                 const std::string& schema) {
  check_schema_name(schema);
  auto n = checked_name(name);
  try {
    auto r = tx.exec_params1("SELECT " + schema + ".fence_check($1, $2)", n,
                             static_cast<long long>(fence));
    return r[0].as<bool>();
  } catch (...) {
    rethrow_mapped("sqlock fence_check failed");
  }
}

std::int64_t lock_key(pqxx::transaction_base& tx, std::string_view name,
                      const std::string& schema) {
  check_schema_name(schema);
  auto n = checked_name(name);
  try {
    auto r = tx.exec_params1("SELECT " + schema + ".lock_key($1)", n);
    return r[0].as<long long>();
  } catch (...) {
    rethrow_mapped("sqlock lock_key failed");
  }
}

}  // namespace sqlock::postgres
