// SQLite backend: a driver for the shared SQL engine plus inotify-based waiting.
#include <poll.h>
#include <sqlite3.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <thread>

#include "dialect.hpp"
#include "shedlock.hpp"
#include "sql/connection_budget.hpp"
#include "sql/sql_engine.hpp"
#include "sqlite_diagnostics.hpp"
#include "sqlock/random.hpp"
#include "sqlock/sqlite/sqlite.hpp"
#include "sqlock/url.hpp"

namespace sqlock {
namespace sqlite {
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
      sqlite3_stmt* st = nullptr;
      int rc = sqlite3_prepare_v2(db_, sql_text, -1, &st, nullptr);
      if (rc != SQLITE_OK) fail(db_, rc, std::string("SQLite prepare of ") + sql_text + " failed");
      s.push_back(st);
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
        sqlite3_stmt* st = nullptr;
        int rc = sqlite3_prepare_v3(db_, tail, static_cast<int>(end - tail),
                                    SQLITE_PREPARE_PERSISTENT, &st, &tail);
        if (rc != SQLITE_OK) {
          for (auto* x : list) sqlite3_finalize(x);
          list.clear();
          fail(db_, rc, "SQLite prepare of operation '" + op.key + "' failed");
        }
        if (st) list.push_back(st);  // null for trailing comments/whitespace
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

// One acquire() call's wait: any commit appends to the WAL file, so an inotify watch on it
// wakes on every release after the watch was set. The watch is set by the first wait() (after
// the first busy attempt), which returns at once so that the core's next attempt runs with the
// watch in place: a release is never missed, and an acquisition that succeeds at once creates
// no inotify instance (closing one waits for the kernel's SRCU grace period, 7-22 ms, which
// `sqlock run` would otherwise pay on every lock). The watch is re-checked at a bounded
// interval: the WAL file may not exist yet (no commit since the database was opened) or be
// reset after a checkpoint.
class wal_watch final : public sql::release_watch {
 public:
  explicit wal_watch(std::string path) : path_(std::move(path)) {}
  ~wal_watch() override {
    if (fd_ >= 0) ::close(fd_);
  }
  wal_watch(const wal_watch&) = delete;
  wal_watch& operator=(const wal_watch&) = delete;

  void wait(steady_time until, const std::stop_token& stop) override {
    if (!opened_) {  // first busy attempt: watch from now on, then let the core try again
      opened_ = true;
      fd_ = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
      arm();
      return;
    }
    auto now = std::chrono::steady_clock::now();
    auto limit = std::min<steady_time>(until, now + (armed_ ? recheck_armed : recheck_unarmed));
    if (!armed_ || fd_ < 0) {
      sleep_until(limit, stop);
      arm();
      return;
    }
    auto ms = std::chrono::ceil<milliseconds>(limit - now).count();
    stop_fd stopped(stop);  // a stop wakes the poll
    pollfd pfd[2] = {{fd_, POLLIN, 0}, {stopped.fd(), POLLIN, 0}};
    if (ms > 0) ::poll(pfd, 2, static_cast<int>(ms));
    char buf[4096];
    while (::read(fd_, buf, sizeof buf) > 0) {
    }
  }

 private:
  static constexpr milliseconds recheck_armed{250};   // in case the WAL file was replaced
  static constexpr milliseconds recheck_unarmed{20};  // no WAL file to watch yet

  void arm() {
    if (fd_ >= 0 && !armed_) armed_ = ::inotify_add_watch(fd_, path_.c_str(), IN_MODIFY) >= 0;
  }

  std::string path_;
  bool opened_ = false;
  int fd_ = -1;
  bool armed_ = false;
};

// sqlock's schema in `o.mode`, or the peer's layout `o.compat` (the only one: ShedLock's table).
sql::dialect layout_dialect(const options& o) {
  if (o.compat.empty()) return make_dialect(o.mode);
  if (o.compat != "shedlock")
    throw config_error("SQLite compat must be shedlock (got '" + o.compat + "')");
  if (o.mode != "pessimistic")
    throw config_error("compat=shedlock keeps ShedLock's rows and rules; mode=" + o.mode +
                       " cannot carry them (leave mode out)");
  return shedlock_dialect(o.shedlock_table);
}

class sqlite_backend final : public sql::engine_backend {
 public:
  // The budget is the statement pool: every connection is one to the file, kept once open
  // (bounded: a call that finds all busy waits for one within its deadline).
  sqlite_backend(const std::string& path, const options& o,
                 std::shared_ptr<sql::connection_counter> counter =
                     std::make_shared<sql::connection_counter>())
      : engine_backend(
            sql::bundle_sqlite(), layout_dialect(o),
            [path, t = o.busy_timeout, counter] {
              return std::make_unique<sqlite_connection>(path, t, counter);
            },
            "sqlite:" + path, sql::split_budget("SQLite", o.max_connections, o.pool, {}).statements,
            true, counter),
        wal_path_(path + "-wal"),
        diagnostics_(*this, path) {
    migrate();  // the schema (or the peer's table) is created on first use: the file is the
                // caller's own
  }

  // The constructor has opened the file and brought its schema up to date just before.
  void verify(steady_time) override {}
  store_diagnostics* diagnostics() noexcept override { return &diagnostics_; }

  capabilities caps() const noexcept override {
    auto c = engine_backend::caps();
    c.notify = true;
    return c;
  }

 protected:
  std::unique_ptr<sql::release_watch> watch_releases(const lock_request&) override {
    return std::make_unique<wal_watch>(wal_path_);
  }

 private:
  std::string wal_path_;
  detail::sqlite_diagnostics diagnostics_;
};

}  // namespace

std::string default_path() {
  const char* xdg = std::getenv("XDG_STATE_HOME");
  std::filesystem::path base;
  if (xdg && *xdg) {
    base = xdg;
  } else {
    const char* home = std::getenv("HOME");
    if (!home || !*home)
      throw config_error("neither XDG_STATE_HOME nor HOME is set: give sqlite:PATH");
    base = std::filesystem::path(home) / ".local" / "state";
  }
  return (base / "sqlock" / "locks.db").string();
}

std::shared_ptr<backend> open(const std::string& path, const options& opts) {
  if (path.empty()) throw config_error("SQLite path must not be empty");
  if (opts.busy_timeout.count() <= 0) throw config_error("SQLite busy_timeout must be > 0");
  return std::make_shared<sqlite_backend>(path, opts);
}

}  // namespace sqlite

namespace backends {
void register_sqlite() {
  register_backend("sqlite", [](const url& u) -> std::shared_ptr<backend> {
    u.check_params({"mode", "busy_timeout", "max_connections", "pool", "compat", "shedlock_table"});
    if (!u.hosts.empty())
      throw config_error("SQLite URL takes a path, not a host: sqlite:/path/to/file.db (got '" +
                         u.redacted() + "')");
    sqlite::options o;
    o.mode = u.choice_param("mode", {"pessimistic", "optimistic"}).value_or("pessimistic");
    o.busy_timeout = u.duration_param("busy_timeout", milliseconds(1)).value_or(o.busy_timeout);
    if (auto v = u.count_param("max_connections", 1, 1000))
      o.max_connections = static_cast<std::size_t>(*v);
    if (auto v = u.count_param("pool", 1, 1000)) o.pool = static_cast<std::size_t>(*v);
    o.compat = u.choice_param("compat", {"shedlock"}).value_or("");
    if (u.query.count("shedlock_table")) o.shedlock_table = u.param("shedlock_table");
    std::string path = u.path;
    if (path.empty()) {
      path = sqlite::default_path();
      std::error_code ec;
      std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
      if (ec) throw config_error("cannot create directory for " + path + ": " + ec.message());
    }
    return sqlite::open(path, o);
  });
}
}  // namespace backends

}  // namespace sqlock
