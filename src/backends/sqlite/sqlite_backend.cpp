// SQLite backend: the shared SQL engine over the SQLite driver (sqlite_driver.hpp), its waiters
// woken by the WAL file's changes (sqlite_wait.hpp); sqlock's schema or ShedLock's table.
#include <memory>
#include <string>

#include "dialect.hpp"
#include "shedlock.hpp"
#include "sql/connection_budget.hpp"
#include "sql/sql_engine.hpp"
#include "sqlite_diagnostics.hpp"
#include "sqlite_driver.hpp"
#include "sqlite_wait.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/sqlite/sqlite.hpp"

namespace sqlock {
namespace sqlite {
namespace {

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
            [path, t = o.busy_timeout, counter] { return detail::connect(path, t, counter); },
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
    return std::make_unique<detail::wal_watch>(wal_path_, wal_notifier_);
  }

 private:
  std::string wal_path_;
  detail::wal_notifier wal_notifier_{wal_path_};  // the asynchronous waiters' one watch
  detail::sqlite_diagnostics diagnostics_;
};

}  // namespace

std::shared_ptr<backend> open(const std::string& path, const options& opts) {
  if (path.empty()) throw config_error("SQLite path must not be empty");
  if (opts.busy_timeout.count() <= 0) throw config_error("SQLite busy_timeout must be > 0");
  return std::make_shared<sqlite_backend>(path, opts);
}

}  // namespace sqlite
}  // namespace sqlock
