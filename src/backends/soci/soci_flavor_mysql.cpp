// soci+mysql: the MySQL/MariaDB dialect of the native backend (CALLs of the stored procedures
// of sql/mysql/) executed through SOCI's mysql backend. SOCI 4.0 does not read the extra
// status result a CALL returns, so it is drained here on the MYSQL handle SOCI holds; scripts
// are split like the `mysql` client does (DELIMITER) by the MySQL dialect target and run on
// that handle too (SOCI would take the ':' of labels for parameters).
#include <soci/mysql/soci-mysql.h>

#include "backends/mysql/dialect.hpp"
#include "backends/mysql/shedlock.hpp"
#include "soci_connection.hpp"
#include "sqlock/random.hpp"

namespace sqlock::soci::detail {
namespace {

MYSQL* mysql_of(::soci::session& s) {
  return native_handle<::soci::mysql_session_backend>(s, "mysql");
}

[[noreturn]] void fail(MYSQL* c, const std::string& what) {
  throw ::soci::mysql_soci_error(what + ": " + mysql_error(c), mysql_errno(c));
}

void drain(MYSQL* c) {
  while (mysql_more_results(c)) {
    int rc = mysql_next_result(c);
    if (rc > 0) fail(c, "MySQL: reading the results of a CALL failed");
    if (rc < 0) break;
    if (MYSQL_RES* r = mysql_store_result(c)) mysql_free_result(r);
  }
}

int error_number(const ::soci::soci_error& e) {
  auto* me = dynamic_cast<const ::soci::mysql_soci_error*>(&e);
  return me ? static_cast<int>(me->err_num_) : 0;
}

class mysql_flavor_impl final : public flavor {
 public:
  std::string soci_name() const override { return "mysql"; }
  const sql::bundle& bundle() const override { return mysql::sql_bundle(); }

  sql::dialect shedlock_dialect(const std::string& table) const override {
    return mysql::shedlock_dialect(table);
  }

  sql::dialect dialect(const options& o) const override {
    if (o.mode == "advisory") refuse_advisory("GET_LOCK", "mysql");
    return mysql::make_dialect(o.mode);
  }

  std::vector<std::string> driver_params() const override { return {"socket"}; }

  std::string connect_string(const url& u, const options& o) const override {
    std::string out;
    auto add = [&](const std::string& k, const std::string& v) {
      if (!out.empty()) out += ' ';
      out += k + "=" + quoted(v);
    };
    if (u.hosts.size() > 1) throw config_error("soci+mysql takes one host: '" + u.redacted() + "'");
    std::string db = u.path;
    if (!db.empty() && db[0] == '/') db.erase(0, 1);
    if (db.empty())
      throw config_error("soci+mysql URL needs a database: soci+mysql://user@host/db");
    add("db", db);
    if (!u.hosts.empty() && !u.hosts[0].host.empty()) add("host", u.hosts[0].host);
    if (!u.hosts.empty() && u.hosts[0].port) add("port", std::to_string(u.hosts[0].port));
    if (u.user) add("user", *u.user);
    if (u.password) add("password", *u.password);
    if (u.query.count("socket")) add("unix_socket", u.param("socket"));
    add("charset", "utf8mb4");
    // The client's own bounds; the watchdog ends a call at its deadline before these.
    for (const char* k : {"connect_timeout", "read_timeout", "write_timeout"})
      add(k, timeout_seconds(o, 1));
    return out;
  }

  std::unique_ptr<::soci::session> open(const std::string& connect) const override {
    return std::make_unique<::soci::session>(::soci::mysql, connect);
  }

  int socket_of(::soci::session& s) const override {
    return static_cast<int>(mysql_get_socket(mysql_of(s)));
  }

  bool in_transaction(::soci::session& s) const override {
    return (mysql_of(s)->server_status & SERVER_STATUS_IN_TRANS) != 0;
  }

  void execute_script(::soci::session& s, std::string_view script) const override {
    MYSQL* c = mysql_of(s);
    for (const auto& st : mysql::split_script(script)) {
      if (mysql_real_query(c, st.data(), static_cast<unsigned long>(st.size())) != 0)
        fail(c, "MySQL script failed");
      if (MYSQL_RES* r = mysql_store_result(c)) mysql_free_result(r);
      drain(c);
    }
  }

  std::vector<std::string> split(std::string_view text) const override {
    return mysql::split_script(text);
  }

  std::string begin_statement() const override { return "START TRANSACTION"; }

  void after_statement(::soci::session& s) const override { drain(mysql_of(s)); }

  bool raw_rows() const override { return true; }

  // The result SOCI stored (mysql_store_result) read as the text the server sent.
  sql::rows read_rows(::soci::statement& st) const override {
    auto* be = static_cast<::soci::mysql_statement_backend*>(st.get_backend());
    sql::rows out;
    MYSQL_RES* r = be ? be->result_ : nullptr;
    if (!r) return out;
    mysql_data_seek(r, 0);
    unsigned n = mysql_num_fields(r);
    while (MYSQL_ROW row = mysql_fetch_row(r)) {
      unsigned long* len = mysql_fetch_lengths(r);
      sql::row values;
      for (unsigned i = 0; i < n; ++i) {
        if (row[i])
          values.emplace_back(std::string(row[i], len[i]));
        else
          values.emplace_back(std::nullopt);
      }
      out.push_back(std::move(values));
    }
    return out;
  }

  bool remote() const override { return true; }

  // `name` is a TEXT column (keyed by a hash when long).
  std::size_t max_name_bytes() const override { return 65535; }

  error_kind classify(const ::soci::soci_error& e, std::string& code) const override {
    if (int n = error_number(e)) {
      code = std::to_string(n);
      if (mysql::is_transient_error(n)) return error_kind::conflict;  // as the native backend
      // No slot for a new session: the server's max_connections, the user's
      // max_user_connections (a resource limit 1226 names; its hourly limits are not transient).
      if (n == 1040 || n == 1203 ||
          (n == 1226 && std::string(e.what()).find("max_user_connections") != std::string::npos))
        return error_kind::server_full;
      if (mysql::is_connection_error(n)) return error_kind::connection;
      if (n == 1044 || n == 1045 || n == 1142 || n == 1370) return error_kind::auth;
      // 1049 no such database, 1366/1300 invalid UTF-8 in a name.
      if (n == 1049 || n == 1366 || n == 1300) return error_kind::config;
      return error_kind::backend;
    }
    if (e.get_error_category() == ::soci::soci_error::connection_error)
      return error_kind::connection;
    return error_kind::backend;
  }

  bool try_xact(::soci::session& s, std::string_view name, const options&,
                bool& wait_ok) const override {
    auto stmts = split(own_sql("mysql", "xact_lock.sql"));
    sql::params p;
    p.name = std::string(name);
    p.holder = default_holder();
    auto busy_error = [](const ::soci::soci_error& e, bool dup_too) {
      int n = error_number(e);
      return n == 1205 /* MariaDB NOWAIT, lock wait timeout */ || n == 3572 /* MySQL NOWAIT */ ||
             (dup_too && n == 1062);
    };
    if (run_once(*this, s, stmts.at(0), p).empty()) {
      run_once(*this, s, stmts.at(1), p);  // short lock wait for the insert
      bool inserted = false;
      try {
        run_once(*this, s, stmts.at(2), p);
        inserted = true;
      } catch (const ::soci::soci_error& e) {
        run_once(*this, s, stmts.at(3), p);
        if (!busy_error(e, true)) throw;
        if (error_number(e) != 1062) return false;  // another open transaction inserted it
        // Inserted and committed by another transaction meanwhile: lock it as a row below.
      }
      if (inserted) {
        run_once(*this, s, stmts.at(3), p);
        return true;  // the new row is ours until the transaction ends
      }
    }
    sql::rows r;
    try {
      r = run_once(*this, s, stmts.at(4), p);
    } catch (const ::soci::soci_error& e) {
      if (busy_error(e, false)) return false;  // row locked by another transaction
      throw;
    }
    if (r.empty()) return false;  // deleted meanwhile (swept): try again
    if (!r[0].empty() && sql::truthy(r[0][0])) {
      wait_ok = false;  // a live lease-based hold: waiting here would keep it from releasing
      return false;
    }
    run_once(*this, s, stmts.at(5), p);
    return true;
  }
};

}  // namespace

const flavor* mysql_flavor() {
  static const mysql_flavor_impl f;
  return &f;
}

}  // namespace sqlock::soci::detail
