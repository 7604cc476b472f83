// The SQL engine's backend (sql_engine.hpp): engine_backend's pool of statement connections
// within the budget, its lock operations through a dialect, admin and schema; the retry of
// transient errors and the row decoders (rows.hpp). The statement compiler is statements.cpp,
// migrations migrations.cpp, the connection counter connection_counter.cpp.
#include "sql_engine.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <set>
#include <thread>

#include "conflict_retry.hpp"
#include "connection_budget.hpp"
#include "sqlock/random.hpp"
#include "sqlock/url.hpp"

namespace sqlock::sql {

void retry_transient(const std::function<void()>& fn, milliseconds budget) {
  auto until = std::chrono::steady_clock::now() + budget;
  for (unsigned attempt = 0;; ++attempt) {
    try {
      fn();
      return;
    } catch (const transient_error&) {
      if (std::chrono::steady_clock::now() >= until) throw;
      std::this_thread::sleep_for(backoff_delay(attempt, milliseconds(2), milliseconds(100)));
    }
  }
}

bool truthy(const std::optional<std::string>& v) {
  if (!v) return false;
  std::string s = *v;
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s == "1" || s == "t" || s == "true" || s == "yes";
}

bool says_true(const rows& r) {
  return !r.empty() && !r[0].empty() && truthy(r[0][0]);
}

// ---- engine_backend ----

engine_backend::engine_backend(bundle b, dialect d, connector open, std::string url_text,
                               std::size_t pool_size, bool bounded,
                               std::shared_ptr<connection_counter> counter)
    : bundle_(std::move(b)),
      dialect_(std::move(d)),
      open_(std::move(open)),
      url_text_(std::move(url_text)),
      pool_size_(std::max<std::size_t>(1, pool_size)),
      bounded_(bounded),
      counter_(std::move(counter)) {
  if (dialect_.clear_marks.statements.empty() || !dialect_.encode_marks) return;
  marks_ = std::make_unique<mark_clearer>(
      [this](const std::vector<mark_clearer::mark>& batch, steady_time deadline) {
        params p;
        p.marks = dialect_.encode_marks(batch);
        p.mode = mode();
        run(dialect_.clear_marks, p, deadline);
      },
      mark_clear_bound);
}

std::optional<connection_stats> engine_backend::connections() const {
  if (!counter_) return std::nullopt;
  return counter_->get();
}

std::unique_ptr<connection> engine_backend::checkout(steady_time deadline,
                                                     const std::stop_token& stop) {
  {
    std::unique_lock lk(pool_mutex_);
    // Nobody waiting: an idle connection, or a new one while the pool has room. Otherwise wait
    // in line behind the callers already waiting, so that none of them is passed over.
    bool open = false;
    if (pool_waiters_.empty()) {
      if (!idle_.empty()) {
        auto c = std::move(idle_.back());
        idle_.pop_back();
        return c;
      }
      open = !bounded_ || pool_open_ < pool_size_;
      if (open) ++pool_open_;  // a place for the connection opened below
    }
    if (!open) {
      pool_waiter w;
      pool_waiters_.push_back(&w);
      auto served = [&] { return w.given || w.may_open; };
      if (deadline == steady_time::max())
        w.cv.wait(lk, stop, served);
      else
        w.cv.wait_until(lk, stop, deadline, served);
      if (w.given) return std::move(w.given);
      if (!w.may_open) {  // still in line: leave it
        pool_waiters_.erase(std::find(pool_waiters_.begin(), pool_waiters_.end(), &w));
        throw pool_busy("every one of the " + std::to_string(pool_size_) +
                        " pooled connections stayed busy until the call's deadline");
      }
    }
  }
  try {
    return open_();
  } catch (...) {
    discard(nullptr);
    throw;
  }
}

void engine_backend::checkin(std::unique_ptr<connection> c) {
  std::unique_lock lk(pool_mutex_);
  if (!pool_waiters_.empty()) {  // straight to the caller waiting longest
    auto* w = pool_waiters_.front();
    pool_waiters_.pop_front();
    w->given = std::move(c);
    w->cv.notify_one();
    return;
  }
  if (bounded_ || idle_.size() < pool_size_) {
    idle_.push_back(std::move(c));
    return;
  }
  --pool_open_;  // an unbounded pool's connection beyond the idle ones kept
  lk.unlock();   // closed unlocked, on return
}

void engine_backend::discard(std::unique_ptr<connection> c) {
  c.reset();  // closed before its place is given to another caller
  std::lock_guard g(pool_mutex_);
  if (!pool_waiters_.empty()) {  // the place goes to the caller waiting longest
    auto* w = pool_waiters_.front();
    pool_waiters_.pop_front();
    w->may_open = true;
    w->cv.notify_one();
    return;
  }
  --pool_open_;
}

void engine_backend::with_connection(const std::function<void(connection&)>& fn,
                                     steady_time deadline, const std::stop_token& stop) {
  auto c = checkout(deadline, stop);
  try {
    fn(*c);
  } catch (const connection_error&) {
    discard(std::move(c));  // broken or in an unknown state
    throw;
  } catch (...) {
    checkin(std::move(c));
    throw;
  }
  checkin(std::move(c));
}

namespace {
// Backoff between connection attempts to a server with too many clients.
constexpr milliseconds full_initial{10};
constexpr milliseconds full_cap{1000};
// How long connect() without a deadline waits for a server with too many clients.
constexpr milliseconds server_full_wait{30000};

// A call that met a server with too many clients and then ran out of time on a later try (a
// connect the deadline cut short): what it throws says both.
[[noreturn]] void still_full(const std::string& full, const connection_error& last) {
  throw server_full(full + "; the last try: " + last.what());
}
}  // namespace

rows engine_backend::run(const operation& op, const params& p, steady_time deadline,
                         const std::stop_token& stop) {
  return run(op, p, deadline, stop, on_conflict::retry);
}

rows engine_backend::run(const operation& op, const params& p, steady_time deadline,
                         const std::stop_token& stop, on_conflict conflicts) {
  // Transient errors (deadlock, serialization, busy) are retried with jittered backoff while
  // the deadline allows; a broken pooled connection is replaced once; a server with too many
  // clients is asked again until the deadline. Every operation is idempotent for its owner, so
  // a retry after a lost reply cannot produce a false "busy" or a double acquisition.
  bool reconnected = false;
  unsigned full = 0;
  std::string full_message;  // the last server_full, if any
  conflict_retry conflicts_left(deadline);
  for (;;) {
    try {
      rows r;
      with_connection(
          [&](connection& c) { r = c.run(op, p, exchange_bound(deadline, io_timeout_)); },
          connection_wait_deadline(deadline), stop);
      return r;
    } catch (const conflict_error&) {
      if (conflicts == on_conflict::raise || !conflicts_left.pause()) throw;
    } catch (const transient_error&) {
      if (!conflicts_left.pause()) throw;
    } catch (const pool_busy&) {
      throw;
    } catch (const server_full& e) {
      full_message = e.what();
      auto now = std::chrono::steady_clock::now();
      auto pause = backoff_delay(full++, full_initial, full_cap);
      if (now + pause >= deadline || !sleep_until(now + pause, stop)) throw;
    } catch (const connection_error& e) {
      if (reconnected || std::chrono::steady_clock::now() >= deadline) {
        if (!full_message.empty()) still_full(full_message, e);
        throw;
      }
      reconnected = true;
    }
  }
}

steady_time engine_backend::admin_deadline() const {
  return std::chrono::steady_clock::now() + io_timeout_;
}

params engine_backend::params_for(const lock_request& req) const {
  params p;
  p.name = req.name;
  p.owner = req.owner;
  p.lease_ms = req.lease.count();
  p.holder = req.holder;
  p.mode = dialect_.mode;
  p.kind = to_string(req.kind);
  p.permits = req.permits;
  return p;
}

params engine_backend::params_for(const lease_info& l, milliseconds lease) const {
  params p;
  p.name = l.name;
  p.owner = l.owner;
  p.lease_ms = lease.count();
  p.mode = dialect_.mode;
  return p;
}

std::vector<lock_status> engine_backend::list(std::string_view prefix) {
  params p;
  p.prefix = std::string(prefix);
  p.mode = dialect_.mode;
  std::vector<lock_status> out;
  for (auto& r : run(dialect_.list, p, admin_deadline())) {
    if (r.size() < 7) throw backend_error("list returned " + std::to_string(r.size()) + " columns");
    lock_status s;
    s.name = r[0].value_or("");
    s.owner = r[1].value_or("");
    s.fence = r[2] ? decode_u64(r[2], "fence") : 0;
    s.acquired_at = r[3].value_or("");
    s.expires_at = r[4].value_or("");
    s.mode = r[5].value_or(dialect_.mode);
    s.holder = r[6].value_or("");
    if (r.size() >= 9) {  // dialects with kinds: kind, permits
      s.kind = decode_kind(r[7]);
      s.permits = r[8] ? static_cast<std::uint32_t>(decode_u64(r[8], "permits")) : 0;
    }
    out.push_back(std::move(s));
  }
  return out;
}

bool engine_backend::force_release(std::string_view name, std::string_view actor) {
  params p;
  p.name = std::string(name);
  p.actor = std::string(actor);
  p.mode = dialect_.mode;
  bool any = says_true(run(dialect_.force_release, p, admin_deadline()));
  if (!dialect_.force_release_shared.statements.empty())
    any = says_true(run(dialect_.force_release_shared, p, admin_deadline())) || any;
  return any;
}

std::vector<lock_event> engine_backend::events(std::string_view prefix, std::size_t limit) {
  params p;
  p.prefix = std::string(prefix);
  p.limit = static_cast<std::int64_t>(limit);
  p.mode = dialect_.mode;
  std::vector<lock_event> out;
  for (auto& r : run(dialect_.events, p, admin_deadline())) {
    if (r.size() < 9)
      throw backend_error("events returned " + std::to_string(r.size()) + " columns");
    lock_event e;
    e.at = r[0].value_or("");
    e.event = r[1].value_or("");
    e.name = r[2].value_or("");
    e.owner = r[3].value_or("");
    e.fence = r[4] ? decode_u64(r[4], "fence") : 0;
    e.mode = r[5].value_or("");
    e.holder = r[6].value_or("");
    e.actor = r[7].value_or("");
    e.detail = r[8].value_or("");
    out.push_back(std::move(e));
  }
  return out;
}

std::size_t engine_backend::sweep() {
  params p;
  p.limit = dialect_.sweep_batch;
  p.mode = dialect_.mode;
  std::size_t total = 0;
  for (const operation* op : {&dialect_.sweep, &dialect_.sweep_shared}) {
    if (op->statements.empty()) continue;
    for (;;) {  // bounded batches until a batch comes back short
      auto r = run(*op, p, admin_deadline());
      std::size_t n = r.empty() || r[0].empty() || !r[0][0] ? 0 : decode_u64(r[0][0], "count");
      total += n;
      if (n < static_cast<std::size_t>(p.limit)) break;
    }
  }
  return total;
}

bool engine_backend::fence_check(std::string_view name, std::uint64_t fence) {
  params p;
  p.name = std::string(name);
  p.fence = static_cast<std::int64_t>(fence);
  p.mode = dialect_.mode;
  return says_true(run(dialect_.fence_check, p, admin_deadline()));
}

void check_table_name(const std::string& table, std::string_view option) {
  auto part_ok = [](std::string_view part) {
    if (part.empty() || part.size() > 63) return false;
    for (std::size_t i = 0; i < part.size(); ++i) {
      const auto c = static_cast<unsigned char>(part[i]);
      if (!(std::isalpha(c) || c == '_' || (i > 0 && std::isdigit(c)))) return false;
    }
    return true;
  };
  const auto dot = table.find('.');
  const bool ok = dot == std::string::npos ? part_ok(table)
                                           : part_ok(std::string_view(table).substr(0, dot)) &&
                                                 part_ok(std::string_view(table).substr(dot + 1));
  if (!ok)
    throw config_error("bad " + std::string(option) + " '" + table +
                       "': give a table name of letters, digits and '_' (not starting with a "
                       "digit, at most 63 characters), optionally as schema.table");
}

capabilities engine_backend::caps() const noexcept {
  capabilities c;
  c.fencing = c.fencing_safe = true;
  c.holder_text = true;
  c.listed_as_taken = true;
  c.cross_process = true;
  c.linger = true;
  c.notify = dialect_.notify;
  c.shared = dialect_.kinds;
  c.permits = dialect_.kinds;
  if (!dialect_.layout_ddl.empty()) {  // a peer's table: no token stored, rows kept
    c.fencing = c.fencing_safe = false;
  }
  return c;
}

std::string engine_backend::describe() const {
  return redact_url(url_text_) + " (" + dialect_.mode + ")" + release_note();
}

void engine_backend::check_schema(steady_time deadline) {
  int have = 0;
  const bool layout = !dialect_.layout_ddl.empty();
  const auto now = std::chrono::steady_clock::now();
  const auto left = deadline - now;
  const auto budget =
      left < milliseconds(10000) ? std::chrono::ceil<milliseconds>(left) : milliseconds(10000);
  // A server with too many clients is asked again until the deadline (30 s without one).
  const auto until = deadline == steady_time::max() ? now + server_full_wait : deadline;
  std::string full_message;  // the last server_full, if any
  for (unsigned full = 0;; ++full) {
    try {
      retry_transient(
          [&] {
            with_connection(
                [&](connection& c) {
                  have = layout
                             ? static_cast<int>(!c.query(dialect_.layout_check, deadline).empty())
                             : schema_version(c, dialect_, deadline);
                },
                until);
          },
          std::max(budget, milliseconds(0)));
      break;
    } catch (const server_full& e) {
      full_message = e.what();
      auto t = std::chrono::steady_clock::now();
      auto pause = backoff_delay(full, full_initial, full_cap);
      if (t + pause >= until) throw;
      std::this_thread::sleep_for(pause);
    } catch (const connection_error& e) {
      if (full_message.empty()) throw;
      still_full(full_message, e);  // a later connect the deadline cut short
    }
  }
  if (layout) {
    if (have) return;
    throw config_error("table " + dialect_.layout_table + " of the " + dialect_.mode +
                       " layout is missing in " + describe() +
                       ": run `sqlock migrate --url '<your url>'` (or create it with the DDL "
                       "`sqlock migrate --print` shows)");
  }
  int need = latest_version(bundle_);
  if (have < need) {
    std::string shown = describe();
    throw schema_error(
        "sqlock schema " +
        (have == 0 ? std::string("is missing") : "is at version " + std::to_string(have)) + " in " +
        shown + "; this library needs version " + std::to_string(need) +
        ": run `sqlock migrate --url '<your url>'` (or `sqlock migrate --print` and apply "
        "it with your SQL client)");
  }
}

void engine_backend::verify(steady_time deadline) {
  if (auto_migrate_)
    migrate();
  else
    check_schema(deadline);
}

int engine_backend::migrate() {
  if (!dialect_.layout_ddl.empty()) {  // a peer's table, created when absent; no versions
    retry_transient(
        [&] { with_connection([&](connection& c) { c.execute_script(dialect_.layout_ddl); }); });
    return 0;
  }
  int v = 0;
  // Several processes may create or upgrade a schema at once: their statements can meet a
  // busy database that does not wait (SQLite's journal-mode switch, DDL locks); retry those.
  retry_transient(
      [&] { with_connection([&](connection& c) { v = sql::migrate(c, bundle_, dialect_); }); });
  return v;
}

std::string engine_backend::migration_script() const {
  if (!dialect_.layout_ddl.empty()) return dialect_.layout_ddl;
  return sql::migration_script(bundle_, dialect_);
}

}  // namespace sqlock::sql
