// The one place where libpq and libpqxx failures become sqlock errors.
#include "errors.hpp"

#include <pqxx/except>

#include "sql/sql_errors.hpp"
#include "sqlock/errors.hpp"

namespace sqlock::postgres {

namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

bool starts_with(const std::string& s, std::string_view prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

bool contains_any(const std::string& msg, std::initializer_list<const char*> needles) {
  for (const char* n : needles)
    if (msg.find(n) != std::string::npos) return true;
  return false;
}

// The server's refusals of a new connection for want of a slot (SQLSTATE 53300; libpq gives no
// SQLSTATE for a failed connection, only the message).
bool too_many_clients(const std::string& msg) {
  return contains_any(
      msg, {"too many clients", "too many connections for role",
            "too many connections for database", "remaining connection slots are reserved"});
}

[[noreturn]] void throw_server_full(const std::string& msg) {
  throw sql::server_full(msg +
                         " — the server had too many clients (max_connections, or a role's or "
                         "database's CONNECTION LIMIT) [SQLSTATE 53300]");
}

// libpqxx 6.4 leaves sqlstate() empty on some of its subclasses: recover it from the type.
std::string code_of(const pqxx::sql_error& e) {
  if (!e.sqlstate().empty()) return e.sqlstate();
  if (dynamic_cast<const pqxx::insufficient_privilege*>(&e)) return "42501";
  if (dynamic_cast<const pqxx::undefined_function*>(&e)) return "42883";
  if (dynamic_cast<const pqxx::undefined_table*>(&e)) return "42P01";
  if (dynamic_cast<const pqxx::undefined_column*>(&e)) return "42703";
  if (dynamic_cast<const pqxx::syntax_error*>(&e)) return "42601";
  if (dynamic_cast<const pqxx::unique_violation*>(&e)) return "23505";
  if (dynamic_cast<const pqxx::integrity_constraint_violation*>(&e)) return "23000";
  if (dynamic_cast<const pqxx::disk_full*>(&e)) return "53100";
  if (dynamic_cast<const pqxx::out_of_memory*>(&e)) return "53200";
  if (dynamic_cast<const pqxx::insufficient_resources*>(&e)) return "53000";
  if (dynamic_cast<const pqxx::data_exception*>(&e)) return "22000";
  if (dynamic_cast<const pqxx::feature_not_supported*>(&e)) return "0A000";
  if (dynamic_cast<const pqxx::plpgsql_raise*>(&e)) return "P0001";
  if (dynamic_cast<const pqxx::plpgsql_error*>(&e)) return "P0000";
  if (dynamic_cast<const pqxx::deadlock_detected*>(&e)) return "40P01";
  if (dynamic_cast<const pqxx::transaction_rollback*>(&e)) return "40001";
  return "XX000";
}

}  // namespace

void throw_mapped(const std::string& what, const std::string& st, const std::string& message) {
  std::string msg = what + ": " + trimmed(message);
  if (st == "40001" || st == "40P01" || st == "55P03")
    throw sql::conflict_error(msg + " [SQLSTATE " + st + "]", st);
  if (st == "53300") throw_server_full(msg);
  if (starts_with(st, "08") || st == "57P01" || st == "57P02" || st == "57P03" || st.empty())
    throw connection_error(msg);
  if (st == "28000" || st == "28P01") throw auth_error(msg + " [SQLSTATE " + st + "]");
  if (st == "42501")
    throw auth_error(msg +
                     " — the connecting role needs the schema's group role: GRANT "
                     "<schema>_execute TO <role> (sqlock_execute for schema sqlock)"
                     " [SQLSTATE 42501]");
  if (st == "3D000") throw config_error(msg);
  if (st == "3F000" || st == "42883" || st == "42P01")
    throw schema_error(msg +
                       " — the sqlock schema is missing or outdated: run `sqlock migrate --url "
                       "'<your url>'` (or apply `sqlock migrate --print` with psql)");
  if (st == "22021" || st == "22P05" || st == "54000")
    throw config_error(msg + " (lock names must be valid UTF-8 text of at most " +
                       std::to_string(max_name_bytes) + " bytes)");
  if (st == "22023" || st == "22008" || st == "22003") throw config_error(msg);
  throw backend_error(msg + " [SQLSTATE " + st + "]", st);
}

void throw_read_only(const std::string& address, bool standby, const std::string& detail) {
  std::string msg = "the server at " + address +
                    (standby ? " is a hot standby (read-only)"
                             : " refused a write: it is a hot standby or read-only "
                               "(default_transaction_read_only)");
  msg += ": point the URL at the primary, or list every host with target_session_attrs=read-write";
  if (!detail.empty()) msg += " (" + trimmed(detail) + ")";
  throw read_only_error(msg + " [SQLSTATE 25006]", "25006");
}

void throw_connect_failure(const std::string& what, const std::string& message) {
  std::string msg = what + ": " + trimmed(message);
  if (too_many_clients(msg)) throw_server_full(msg);
  if (contains_any(msg, {"password authentication failed", "no password supplied", "pg_hba.conf",
                         "permission denied for database", "is not permitted to log in",
                         "authentication failed", "SSL authentication", "certificate"}))
    throw auth_error(msg);
  if (msg.find("role \"") != std::string::npos && msg.find("does not exist") != std::string::npos)
    throw auth_error(msg);  // an unknown user is refused credentials
  if (contains_any(msg, {"does not exist", "invalid URI", "invalid connection option",
                         "invalid sslmode", "invalid integer value", "invalid port number"}))
    throw config_error(msg);
  throw connection_error(msg);
}

void rethrow_mapped(const std::string& what) {
  try {
    throw;
  } catch (const error&) {
    throw;
  } catch (const pqxx::broken_connection& e) {
    throw_connect_failure(what, e.what());
  } catch (const pqxx::statement_completion_unknown& e) {
    throw connection_error(what + " (outcome unknown): " + trimmed(e.what()));
  } catch (const pqxx::in_doubt_error& e) {
    throw connection_error(what + " (outcome unknown): " + trimmed(e.what()));
  } catch (const pqxx::sql_error& e) {
    throw_mapped(what, code_of(e), e.what());
  } catch (const std::exception& e) {
    throw backend_error(what + ": " + trimmed(e.what()));
  } catch (...) {
    throw backend_error(what + ": unknown error");
  }
}

}  // namespace sqlock::postgres
