// `sqlock doctor` for PostgreSQL (sqlock/doctor.hpp): server and version, pooler and its pool
// mode, primary or standby, schema version and EXECUTE grants, clock offset, the connection
// budget against the server's free slots, and the role's and database's timeouts. Checks run
// on connections of their own (plain sessions: they see the DBA's defaults that sqlock's
// sessions override), the schema check through the backend's pool.
#pragma once

#include <string>

#include "sql/sql_engine.hpp"
#include "sqlock/doctor.hpp"
#include "sqlock/postgres/postgres.hpp"

namespace sqlock::postgres {

class libpq_connection;

/// The checks of one PostgreSQL backend (`engine`, which owns it).
class pg_diagnostics final : public store_diagnostics {
 public:
  pg_diagnostics(sql::engine_backend& engine, std::string conninfo, const options& o);
  std::vector<finding> check(steady_time deadline) override;

 private:
  void server(libpq_connection& l, steady_time bound, std::vector<finding>& out);
  void role(libpq_connection& l, steady_time bound, std::vector<finding>& out);
  void pooler(libpq_connection& l, steady_time bound, std::vector<finding>& out);
  void schema(libpq_connection& l, steady_time bound, std::vector<finding>& out);
  void clock(libpq_connection& l, steady_time bound, std::vector<finding>& out);
  void budget(libpq_connection& l, steady_time bound, std::vector<finding>& out);
  void timeouts(libpq_connection& l, steady_time bound, std::vector<finding>& out);

  sql::engine_backend& engine_;
  const std::string conninfo_;
  const options o_;
};

}  // namespace sqlock::postgres
