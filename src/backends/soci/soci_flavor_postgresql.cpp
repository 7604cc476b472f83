// soci+postgresql: the PostgreSQL dialect of the native backend (the stored functions of
// sql/postgresql/, one SELECT per operation) executed through SOCI's postgresql backend.
// Scripts run with PQexec on the connection SOCI holds (libpq runs a multi-statement file as
// one implicit transaction, as `psql -1` does); transaction-scoped locks call
// sqlock.try_xact_lock (pg_try_advisory_xact_lock on sqlock.lock_key(name)).
#include <libpq-fe.h>
#include <soci/postgresql/soci-postgresql.h>

#include "backends/postgres/dialect.hpp"
#include "backends/postgres/shedlock.hpp"
#include "soci_connection.hpp"

namespace sqlock::soci::detail {
namespace {

PGconn* pgconn_of(::soci::session& s) {
  return native_handle<::soci::postgresql_session_backend>(s, "postgresql");
}

std::string schema_of(const options& o) {
  return o.schema.empty() ? std::string(postgres::default_schema) : o.schema;
}

class postgresql_flavor_impl final : public flavor {
 public:
  std::string soci_name() const override { return "postgresql"; }
  const sql::bundle& bundle() const override { return postgres::bundle(); }

  sql::dialect shedlock_dialect(const std::string& table) const override {
    return postgres::shedlock_dialect(table);
  }

  sql::dialect dialect(const options& o) const override {
    if (o.mode == "advisory") refuse_advisory("session-level locks", "postgresql");
    return postgres::make_dialect(o.mode, schema_of(o));
  }

  std::vector<std::string> driver_params() const override {
    return {"schema", "sslmode", "connect_timeout", "application_name", "sslrootcert"};
  }

  void apply_params(const url& u, options& o) const override {
    if (u.query.count("schema")) {
      o.schema = u.param("schema");
      postgres::check_schema_name(o.schema);
    }
  }

  std::string connect_string(const url& u, const options& o) const override {
    std::string out;
    auto add = [&](const std::string& k, const std::string& v) {
      if (v.empty()) return;
      if (!out.empty()) out += ' ';
      out += k + "=" + quoted(v);
    };
    if (u.hosts.size() > 1) {
      std::string hosts, ports;
      for (const auto& h : u.hosts) {
        hosts += (hosts.empty() ? "" : ",") + h.host;
        ports += (ports.empty() ? "" : ",") + std::to_string(h.port ? h.port : 5432);
      }
      add("host", hosts);
      add("port", ports);
    } else if (!u.hosts.empty()) {
      add("host", u.hosts[0].host);
      if (u.hosts[0].port) add("port", std::to_string(u.hosts[0].port));
    }
    std::string db = u.path;
    if (!db.empty() && db[0] == '/') db.erase(0, 1);
    add("dbname", db);
    if (u.user) add("user", *u.user);
    if (u.password) add("password", *u.password);
    for (const char* k : {"sslmode", "application_name", "sslrootcert"})
      if (u.query.count(k)) add(k, u.param(k));
    // Connecting is bounded by the I/O timeout (libpq's minimum is 2 s) unless the URL says.
    auto connect_s = u.count_param("connect_timeout", 1, 86400);
    add("connect_timeout", connect_s ? std::to_string(*connect_s) : timeout_seconds(o, 2));
    if (out.empty())
      throw config_error("soci+postgresql URL names no server: '" + u.redacted() + "'");
    return out;
  }

  std::unique_ptr<::soci::session> open(const std::string& connect) const override {
    return std::make_unique<::soci::session>(::soci::postgresql, connect);
  }

  int socket_of(::soci::session& s) const override { return PQsocket(pgconn_of(s)); }

  bool in_transaction(::soci::session& s) const override {
    return PQtransactionStatus(pgconn_of(s)) != PQTRANS_IDLE;
  }

  void execute_script(::soci::session& s, std::string_view script) const override {
    PGconn* c = pgconn_of(s);
    std::string text(script);
    PGresult* r = PQexec(c, text.c_str());
    auto st = PQresultStatus(r);
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK || st == PGRES_EMPTY_QUERY) {
      PQclear(r);
      return;
    }
    std::string msg = r ? PQresultErrorMessage(r) : PQerrorMessage(c);
    const char* code = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
    std::string sqlstate = code ? code : (PQstatus(c) == CONNECTION_BAD ? "08006" : "XX000");
    PQclear(r);
    throw ::soci::postgresql_soci_error("PostgreSQL script failed: " + msg, sqlstate.c_str());
  }

  std::vector<std::string> split(std::string_view text) const override {
    return {std::string(text)};  // every operation of the dialect is one statement
  }

  bool remote() const override { return true; }

  // The native backend's limit: the name is the primary key, and a btree entry holds ~2700.
  std::size_t max_name_bytes() const override { return 2600; }

  // libpq reports a refused password in the message of the failed connection (no SQLSTATE).
  error_kind classify_open(const ::soci::soci_error& e, std::string& code) const override {
    std::string m = e.what();
    for (const char* s : {"password authentication failed", "no password supplied",
                          "authentication failed", "no pg_hba.conf entry"})
      if (m.find(s) != std::string::npos) return error_kind::auth;
    // SQLSTATE 53300 (no SQLSTATE for a failed connection, only the message).
    for (const char* s :
         {"too many clients", "too many connections for role", "too many connections for database",
          "remaining connection slots are reserved"})
      if (m.find(s) != std::string::npos) return error_kind::server_full;
    return flavor::classify_open(e, code);
  }

  error_kind classify(const ::soci::soci_error& e, std::string& code) const override {
    if (auto* pe = dynamic_cast<const ::soci::postgresql_soci_error*>(&e)) {
      std::string st = pe->sqlstate();
      code = st;
      if (st == "40001" || st == "40P01" || st == "55P03") return error_kind::conflict;
      if (st == "53300") return error_kind::server_full;  // too many clients
      if (st.rfind("08", 0) == 0 || st == "57P01" || st == "57P02" || st == "57P03")
        return error_kind::connection;
      if (st == "28000" || st == "28P01" || st == "42501") return error_kind::auth;
      // 3D000 no such database, 22021 invalid UTF-8, 54000 name too long for the index.
      if (st == "3D000" || st == "22021" || st == "54000") return error_kind::config;
      return error_kind::backend;
    }
    if (e.get_error_category() == ::soci::soci_error::connection_error)
      return error_kind::connection;
    return error_kind::backend;
  }

  bool try_xact(::soci::session& s, std::string_view name, const options& o, bool&) const override {
    sql::params p;
    p.name = std::string(name);
    auto text = postgres::render("SELECT sqlock.try_xact_lock(:name)", schema_of(o));
    auto r = run_once(*this, s, text, p);
    return sql::says_true(r);
  }
};

}  // namespace

const flavor* postgresql_flavor() {
  static const postgresql_flavor_impl f;
  return &f;
}

}  // namespace sqlock::soci::detail
