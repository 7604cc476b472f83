// soci+sqlite3: the SQLite dialect of the native backend (sql/sqlite/, migrations/sqlite/)
// executed through SOCI's sqlite3 backend. The dialect's SQL functions (sqlock_now_ms,
// sqlock_boot_id) are registered on the raw handle SOCI holds.
#include <soci/sqlite3/soci-sqlite3.h>

#include <cctype>

#include "backends/sqlite/dialect.hpp"
#include "backends/sqlite/shedlock.hpp"
#include "soci_connection.hpp"
#include "sqlock/random.hpp"

namespace sqlock::soci::detail {
namespace {

// SOCI wraps <sqlite3.h> in namespace sqlite_api; the handle is the same C object.
sqlite_api::sqlite3* sqlite_of(::soci::session& s) {
  return native_handle<::soci::sqlite3_session_backend>(s, "sqlite3");
}

::sqlite3* for_dialect(sqlite_api::sqlite3* h) {
  return reinterpret_cast<::sqlite3*>(h);
}

void exec(sqlite_api::sqlite3* h, const std::string& text) {
  char* err = nullptr;
  int rc = sqlite_api::sqlite3_exec(h, text.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite_api::sqlite3_errstr(rc);
    sqlite_api::sqlite3_free(err);
    throw ::soci::sqlite3_soci_error("SQLite: " + msg, rc);
  }
}

class sqlite3_flavor_impl final : public flavor {
 public:
  std::string soci_name() const override { return "sqlite3"; }
  const sql::bundle& bundle() const override { return sql::bundle_sqlite(); }

  sql::dialect shedlock_dialect(const std::string& table) const override {
    return sqlite::shedlock_dialect(table);
  }

  sql::dialect dialect(const options& o) const override {
    auto d = sqlite::make_dialect(o.mode);
    d.notify = false;  // no inotify watcher here: waiters poll with backoff
    return d;
  }

  std::vector<std::string> driver_params() const override { return {"busy_timeout"}; }

  void apply_params(const url& u, options& o) const override {
    o.busy_timeout = u.duration_param("busy_timeout", milliseconds(1), std::chrono::hours(24))
                         .value_or(o.busy_timeout);
  }

  std::string connect_string(const url& u, const options&) const override {
    if (!u.hosts.empty())
      throw config_error(
          "soci+sqlite3 takes a path, not a host: soci+sqlite3:/path/to/file.db (got '" +
          u.redacted() + "')");
    if (u.path.empty()) throw config_error("soci+sqlite3 needs a path: soci+sqlite3:/path/file.db");
    for (char c : u.path)
      if (std::isspace(static_cast<unsigned char>(c)) || c == '"' || c == '\'')
        throw config_error(
            "soci+sqlite3 paths cannot contain blanks or quotes (SOCI connection "
            "strings cannot carry them): '" +
            u.path + "'");
    return "db=" + u.path;
  }

  std::unique_ptr<::soci::session> open(const std::string& connect) const override {
    return std::make_unique<::soci::session>(::soci::sqlite3, connect);
  }

  void prepare_session(::soci::session& s, const options& o, bool owned) const override {
    auto* h = sqlite_of(s);
    sqlite::install_functions(for_dialect(h));
    if (owned) {
      sqlite_api::sqlite3_busy_timeout(
          h, static_cast<int>(std::min<std::int64_t>(o.busy_timeout.count(), 1 << 30)));
      exec(h, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
    }
  }

  // Waiting for another writer ends at the deadline (SQLITE_BUSY, which the engine retries while
  // the deadline allows).
  void limit_wait(::soci::session& s, steady_time deadline, const options& o) const override {
    auto left = std::chrono::ceil<milliseconds>(deadline - std::chrono::steady_clock::now());
    auto wait = std::clamp<milliseconds>(left, milliseconds(1), o.busy_timeout);
    sqlite_api::sqlite3_busy_timeout(
        sqlite_of(s), static_cast<int>(std::min<std::int64_t>(wait.count(), 1 << 30)));
  }

  bool in_transaction(::soci::session& s) const override {
    return sqlite_api::sqlite3_get_autocommit(sqlite_of(s)) == 0;
  }

  void execute_script(::soci::session& s, std::string_view script) const override {
    exec(sqlite_of(s), std::string(script));
  }

  // Statement boundaries exactly as SQLite sees them (sqlite3_complete knows literals,
  // comments and trigger bodies).
  std::vector<std::string> split(std::string_view text) const override {
    std::vector<std::string> out;
    std::string cur;
    for (char c : text) {
      cur.push_back(c);
      if (c == ';' && sqlite_api::sqlite3_complete(cur.c_str())) {
        auto b = code_start(cur, true);
        if (b < cur.size()) out.push_back(cur.substr(b));  // comments before it dropped
        cur.clear();
      }
    }
    auto b = code_start(cur, true);
    if (b < cur.size()) out.push_back(cur.substr(b));
    return out;
  }

  std::string begin_statement() const override { return "BEGIN IMMEDIATE"; }

  error_kind classify(const ::soci::soci_error& e, std::string& code) const override {
    if (auto* se = dynamic_cast<const ::soci::sqlite3_soci_error*>(&e)) {
      int rc = se->result();
      code = std::to_string(rc);
      switch (rc & 0xff) {
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
          return error_kind::transient;
        case SQLITE_CANTOPEN:
        case SQLITE_NOTADB:
        case SQLITE_READONLY:
        case SQLITE_PERM:
        case SQLITE_AUTH:
          return error_kind::config;
        default:
          return error_kind::backend;
      }
    }
    // SOCI reports a failed sqlite3_open as a plain soci_error: the path is unusable.
    if (e.get_error_category() == ::soci::soci_error::connection_error) return error_kind::config;
    return error_kind::backend;
  }

  bool try_xact(::soci::session& s, std::string_view name, const options&,
                bool& wait_ok) const override {
    sqlite::install_functions(for_dialect(sqlite_of(s)));
    auto stmts = split(own_sql("sqlite", "xact_lock.sql"));
    sql::params p;
    p.name = std::string(name);
    p.holder = default_holder();
    auto held = run_once(*this, s, stmts.at(0), p);
    if (sql::says_true(held)) {
      wait_ok = false;
      return false;
    }
    try {
      run_once(*this, s, stmts.at(1), p);
    } catch (const ::soci::sqlite3_soci_error& e) {
      int primary = e.result() & 0xff;
      if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) return false;  // another writer
      throw;
    }
    return true;
  }

  bool migrates_on_open() const override { return true; }
};

}  // namespace

const flavor* sqlite3_flavor() {
  static const sqlite3_flavor_impl f;
  return &f;
}

}  // namespace sqlock::soci::detail
