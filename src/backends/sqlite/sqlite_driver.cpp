// The SQLite driver of the shared SQL engine: one connection to the database file (WAL, busy
// timeout bounded by the call's deadline), statements prepared once per connection, an
// operation run in one BEGIN IMMEDIATE transaction.
#include "sqlite_driver.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <map>
#include <vector>

#include "dialect.hpp"
#include "sql/sql_errors.hpp"
#include "sqlock/errors.hpp"

namespace sqlock::sqlite::detail {
namespace {

using sql::rows;

[[noreturn]] void fail(sqlite3* db, int rc, const std::string& what) {
  std::string msg = what + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  int primary = rc & 0xff;
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)
    throw sql::transient_error(msg, std::to_string(rc));
  if (primary == SQLITE_CANTOPEN || primary == SQLITE_NOTADB || primary == SQLITE_READONLY ||
      primary == SQLITE_PERM || primary == SQLITE_AUTH)
    throw config_error(msg);
  throw backend_error(msg, std::to_string(rc));
}

class sqlite_connection final : public sql::connection {
 public:
  // Counts in `counter` while open.
  sqlite_connection(const std::string& path, milliseconds busy_timeout,
                    std::shared_ptr<sql::connection_counter> counter)
      : busy_timeout_(busy_timeout), counter_(std::move(counter)) {
    int rc =
        sqlite3_open_v2(path.c_str(), &db_,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
      std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
      sqlite3_close(db_);
      throw config_error("cannot open SQLite database '" + path + "': " + msg);
    }
    sqlite3_extended_result_codes(db_, 1);
    // Closing does not checkpoint: a short-lived process (`sqlock run`) would otherwise sync
    // the WAL, the database and the directory on every exit. Commits checkpoint the WAL
    // every 64 pages instead (wal_autocheckpoint below), which keeps it small: the next
    // process to open the file reads all of it.
    sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
    sqlite3_busy_timeout(db_,
                         static_cast<int>(std::min<std::int64_t>(busy_timeout.count(), 1 << 30)));
    try {
      install_functions(db_);
      // Switching a new file to WAL needs an exclusive lock, for which SQLite may answer
      // "busy" at once instead of waiting: retry within the busy timeout.
      sql::retry_transient(
          [&] {
            execute_script(
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                "PRAGMA wal_autocheckpoint=64;");
          },
          busy_timeout);
    } catch (...) {
      sqlite3_close(db_);
      throw;
    }
    counter_->opened();
  }
  ~sqlite_connection() override {
    for (auto& [k, list] : cache_)
      for (auto* s : list) sqlite3_finalize(s);
    sqlite3_close(db_);
    counter_->closed();
  }

  rows run(const sql::operation& op, const sql::params& p, steady_time deadline) override {
    auto& stmts = prepared(op);
    // Waiting for another writer ends at the deadline (SQLITE_BUSY, retried by the engine
    // while the deadline allows).
    auto left = std::chrono::ceil<milliseconds>(deadline - std::chrono::steady_clock::now());
    auto wait = std::clamp<milliseconds>(left, milliseconds(1), busy_timeout_);
    sqlite3_busy_timeout(db_, static_cast<int>(std::min<std::int64_t>(wait.count(), 1 << 30)));
    exec_simple("BEGIN IMMEDIATE");
    rows out;
    try {
      for (std::size_t i = 0; i < stmts.size(); ++i) {
        rows r = step_all(stmts[i], &p);
        if (i + 1 == stmts.size()) out = std::move(r);
      }
      exec_simple("COMMIT");
    } catch (...) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
    return out;
  }

  void execute_script(std::string_view script) override {
    std::string s(script);
    char* err = nullptr;
    int rc = sqlite3_exec(db_, s.c_str(), nullptr, nullptr, &err);
    if (rc != SQLITE_OK) {
      std::string msg = err ? err : sqlite3_errstr(rc);
      sqlite3_free(err);
      fail(nullptr, rc, "SQLite script failed: " + msg);
    }
  }

  // Concurrent migrations of one file: each runs in one write transaction (BEGIN IMMEDIATE
  // waits for another writer up to the busy timeout, then "busy", which migrate() retries), so
  // a later one reads the version the earlier one committed.
  void begin_migration() override {
    sqlite3_busy_timeout(db_,
                         static_cast<int>(std::min<std::int64_t>(busy_timeout_.count(), 1 << 30)));
    exec_simple("BEGIN IMMEDIATE");
  }

  void end_migration(bool completed) override {
    if (!completed) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      return;
    }
    try {
      exec_simple("COMMIT");
    } catch (...) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }

  rows query(std::string_view text, steady_time) override {
    sqlite3_stmt* s = nullptr;
    int rc = sqlite3_prepare_v2(db_, text.data(), static_cast<int>(text.size()), &s, nullptr);
    if (rc != SQLITE_OK) fail(db_, rc, "SQLite prepare failed");
    try {
      rows r = step_all(s, nullptr);
      sqlite3_finalize(s);
      return r;
    } catch (...) {
      sqlite3_finalize(s);
      throw;
    }
  }

 private:
  void exec_simple(const char* sql_text) {
    auto& s = cache_[sql_text];
    if (s.empty()) {
      sqlite3_stmt* stmt = nullptr;
      int rc = sqlite3_prepare_v2(db_, sql_text, -1, &stmt, nullptr);
      if (rc != SQLITE_OK) fail(db_, rc, std::string("SQLite prepare of ") + sql_text + " failed");
      s.push_back(stmt);
    }
    step_all(s[0], nullptr);
  }

  // Every statement of the op's texts, prepared once per connection.
  std::vector<sqlite3_stmt*>& prepared(const sql::operation& op) {
    auto& list = cache_[op.key];
    if (!list.empty()) return list;
    for (const auto& text : op.statements) {
      const char* tail = text.c_str();
      const char* end = text.c_str() + text.size();
      while (tail < end) {
        sqlite3_stmt* stmt = nullptr;
        int rc = sqlite3_prepare_v3(db_, tail, static_cast<int>(end - tail),
                                    SQLITE_PREPARE_PERSISTENT, &stmt, &tail);
        if (rc != SQLITE_OK) {
          for (auto* x : list) sqlite3_finalize(x);
          list.clear();
          fail(db_, rc, "SQLite prepare of operation '" + op.key + "' failed");
        }
        if (stmt) list.push_back(stmt);  // null for trailing comments/whitespace
      }
    }
    return list;
  }

  rows step_all(sqlite3_stmt* s, const sql::params* p) {
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    if (p) {
      int n = sqlite3_bind_parameter_count(s);
      for (int i = 1; i <= n; ++i) {
        const char* pname = sqlite3_bind_parameter_name(s, i);
        if (!pname) continue;
        sql::value v = sql::lookup(*p, pname + 1);
        if (v.is_int)
          sqlite3_bind_int64(s, i, v.i);
        else
          sqlite3_bind_text(s, i, v.s.data(), static_cast<int>(v.s.size()), SQLITE_STATIC);
      }
    }
    rows out;
    for (;;) {
      int rc = sqlite3_step(s);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) {
        sqlite3_reset(s);
        fail(db_, rc, "SQLite statement failed");
      }
      sql::row r;
      int cols = sqlite3_column_count(s);
      for (int c = 0; c < cols; ++c) {
        if (sqlite3_column_type(s, c) == SQLITE_NULL) {
          r.emplace_back(std::nullopt);
        } else {
          auto* t = reinterpret_cast<const char*>(sqlite3_column_text(s, c));
          r.emplace_back(std::string(t, static_cast<std::size_t>(sqlite3_column_bytes(s, c))));
        }
      }
      out.push_back(std::move(r));
    }
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return out;
  }

  milliseconds busy_timeout_;
  std::shared_ptr<sql::connection_counter> counter_;
  sqlite3* db_ = nullptr;
  std::map<std::string, std::vector<sqlite3_stmt*>, std::less<>> cache_;
};

}  // namespace

std::unique_ptr<sql::connection> connect(const std::string& path, milliseconds busy_timeout,
                                         std::shared_ptr<sql::connection_counter> counter) {
  return std::make_unique<sqlite_connection>(path, busy_timeout, std::move(counter));
}

}  // namespace sqlock::sqlite::detail
