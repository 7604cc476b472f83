// PostgreSQL backend: a libpqxx driver for the shared SQL engine (prepared statements, one
// round trip per lock operation), waiters woken by LISTEN/NOTIFY through one listener
// connection and thread per backend object, and advisory mode's session-level locks
// multiplexed over a small pool of dedicated sessions.
#include <fcntl.h>
#include <libpq-fe.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <pqxx/pqxx>
#include <thread>
#include <utility>

#include "postgres_internal.hpp"
#include "sqlock/postgres/dialect.hpp"
#include "sqlock/postgres/postgres.hpp"
#include "sqlock/random.hpp"
#include "sqlock/sql_engine.hpp"
#include "sqlock/url.hpp"

namespace sqlock::postgres {
namespace {

using sql::rows;

// Serializes concurrent migrations of one database ("sqlock" + 0x0001 as a 64-bit key).
constexpr const char* migrate_lock_key = "8318004226567127041";

// Opens a libpqxx connection that never silently reconnects (a new session would lose the
// advisory locks and LISTENs of the old one) and keeps server notices off stderr.
class raw_connection {
 public:
  explicit raw_connection(const std::string& conninfo) {
    try {
      conn_ = std::make_unique<pqxx::connection>(conninfo);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
      conn_->inhibit_reactivation(true);
#pragma GCC diagnostic pop
      quiet_ = std::make_unique<pqxx::quiet_errorhandler>(*conn_);
    } catch (...) {
      rethrow_mapped("cannot connect to PostgreSQL");
    }
  }
  pqxx::connection& get() {
    return *conn_;
  }

 private:
  std::unique_ptr<pqxx::connection> conn_;           // destroyed last
  std::unique_ptr<pqxx::quiet_errorhandler> quiet_;  // unregisters itself first
};

// ---- the driver ----

class pg_connection final : public sql::connection {
 public:
  explicit pg_connection(const std::string& conninfo) : raw_(conninfo) {}

  rows run(const sql::operation& op, const sql::params& p) override {
    const auto& stmts = prepared(op);
    try {
      auto& c = raw_.get();
      if (stmts.size() == 1) {  // one function call: autocommit, one round trip
        pqxx::nontransaction tx(c);
        auto r = exec(tx, stmts[0], p);
        tx.commit();
        return to_rows(r);
      }
      pqxx::work tx(c);
      pqxx::result last;
      for (const auto& s : stmts) last = exec(tx, s, p);
      tx.commit();
      return to_rows(last);
    } catch (...) {
      rethrow_mapped("PostgreSQL operation '" + op.key + "' failed");
    }
  }

  // One file per call, sent as one simple query: PostgreSQL runs it as one implicit
  // transaction. Concurrent migrations of one database wait for each other.
  void execute_script(std::string_view script) override {
    try {
      auto& c = raw_.get();
      {
        pqxx::nontransaction tx(c);
        tx.exec(std::string("SELECT pg_advisory_lock(") + migrate_lock_key + ")");
        tx.commit();
      }
      try {
        pqxx::nontransaction tx(c);
        tx.exec(std::string(script));
        tx.commit();
      } catch (...) {
        try {
          pqxx::nontransaction tx(c);
          tx.exec(std::string("SELECT pg_advisory_unlock(") + migrate_lock_key + ")");
          tx.commit();
        } catch (...) {
          // The connection is broken: the session lock went with it.
        }
        throw;
      }
      pqxx::nontransaction tx(c);
      tx.exec(std::string("SELECT pg_advisory_unlock(") + migrate_lock_key + ")");
      tx.commit();
    } catch (...) {
      rethrow_mapped("PostgreSQL migration script failed");
    }
  }

  rows query(std::string_view text) override {
    try {
      pqxx::nontransaction tx(raw_.get());
      auto r = tx.exec(std::string(text));
      tx.commit();
      return to_rows(r);
    } catch (...) {
      rethrow_mapped("PostgreSQL query failed");
    }
  }

 private:
  struct statement {
    std::string name;                // prepared statement name on this connection
    std::vector<std::string> names;  // parameter names for $1, $2, ...
  };

  const std::vector<statement>& prepared(const sql::operation& op) {
    auto it = cache_.find(op.key);
    if (it != cache_.end()) return it->second;
    std::vector<statement> list;
    try {
      for (const auto& text : op.statements) {
        auto c = sql::compile(text, sql::placeholder::dollar);
        statement s{"sqlock_" + std::to_string(++counter_), std::move(c.names)};
        raw_.get().prepare(s.name, c.text);
        list.push_back(std::move(s));
      }
    } catch (...) {
      rethrow_mapped("PostgreSQL prepare of operation '" + op.key + "' failed");
    }
    return cache_.emplace(op.key, std::move(list)).first->second;
  }

  static pqxx::result exec(pqxx::transaction_base& tx, const statement& s, const sql::params& p) {
    std::vector<std::string> values;
    values.reserve(s.names.size());
    for (const auto& n : s.names) {
      auto v = sql::lookup(p, n);
      if (v.is_int) {
        values.push_back(std::to_string(v.i));
      } else {
        if (v.s.find('\0') != std::string_view::npos)
          throw config_error("PostgreSQL text cannot contain NUL bytes (parameter :" + n + ")");
        values.emplace_back(v.s);
      }
    }
    return tx.exec_prepared(s.name, pqxx::prepare::make_dynamic_params(values));
  }

  static rows to_rows(const pqxx::result& r) {
    rows out;
    out.reserve(r.size());
    for (const auto& row : r) {
      sql::row x;
      x.reserve(row.size());
      for (const auto& f : row) {
        if (f.is_null())
          x.emplace_back(std::nullopt);
        else
          x.emplace_back(std::string(f.c_str(), f.size()));
      }
      out.push_back(std::move(x));
    }
    return out;
  }

  raw_connection raw_;
  std::map<std::string, std::vector<statement>, std::less<>> cache_;
  unsigned counter_ = 0;
};

// ---- LISTEN/NOTIFY ----

// Hash of a notified name; 0 is reserved for "anything may have changed".
std::size_t name_hash(std::string_view name) {
  auto h = std::hash<std::string_view>{}(name);
  return h == 0 ? 1 : h;
}

// What try_acquire saw last on this thread: wait_for_change() wakes at once for a notification
// that arrived after it (a release between the busy attempt and the start of the wait).
struct wait_snapshot {
  const void* backend = nullptr;
  std::uint64_t seq = 0;
};
thread_local wait_snapshot tl_snapshot;

// One listener connection and thread per backend object, started on the first wait. Keeps a
// bounded log of recent notifications (sequence number, name hash) that waiters scan.
class notifier {
 public:
  notifier(std::string conninfo, std::string channel)
      : conninfo_(std::move(conninfo)), channel_(std::move(channel)) {}
  ~notifier() {
    {
      std::lock_guard g(m_);
      stop_ = true;
    }
    cv_.notify_all();
    if (pipe_[1] >= 0) {
      char b = 1;
      [[maybe_unused]] auto n = ::write(pipe_[1], &b, 1);
    }
    if (th_.joinable()) th_.join();
    for (int fd : pipe_)
      if (fd >= 0) ::close(fd);
  }
  notifier(const notifier&) = delete;
  notifier& operator=(const notifier&) = delete;

  std::uint64_t seq() const { return seq_.load(std::memory_order_acquire); }

  void ensure_started() {
    std::lock_guard g(m_);
    if (started_ || stop_) return;
    if (::pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) != 0) return;  // waiters fall back to polling
    started_ = true;
    th_ = std::thread([this] { run(); });
  }

  // Returns when a notification for `h` (or for anything) newer than `since` is known, or at
  // `until`.
  void wait(std::size_t h, std::uint64_t since, steady_time until) {
    std::unique_lock lk(m_);
    for (;;) {
      if (!log_.empty() && log_.front().first > since + 1) return;  // some were dropped
      for (auto it = log_.rbegin(); it != log_.rend() && it->first > since; ++it)
        if (it->second == h || it->second == 0) return;
      if (stop_) return;
      if (cv_.wait_until(lk, until) == std::cv_status::timeout) return;
    }
  }

 private:
  class receiver final : public pqxx::notification_receiver {
   public:
    receiver(pqxx::connection_base& c, const std::string& channel, notifier& n)
        : pqxx::notification_receiver(c, channel), n_(n) {}
    void operator()(const std::string& payload, int) override {
      n_.push(payload.empty() ? 0 : name_hash(payload));
    }

   private:
    notifier& n_;
  };

  void push(std::size_t h) {
    {
      std::lock_guard g(m_);
      auto s = seq_.load(std::memory_order_relaxed) + 1;
      log_.emplace_back(s, h);
      if (log_.size() > 4096) log_.pop_front();
      seq_.store(s, std::memory_order_release);
    }
    cv_.notify_all();
  }

  void run() {
    for (unsigned attempt = 0;; ++attempt) {
      {
        std::lock_guard g(m_);
        if (stop_) return;
      }
      try {
        raw_connection raw(conninfo_);
        auto& c = raw.get();
        receiver r(c, channel_, *this);  // LISTEN, before the "connected" wake-up below
        push(0);                         // (re)connected: a release may have been missed meanwhile
        attempt = 0;
        for (;;) {
          pollfd fds[2] = {{c.sock(), POLLIN, 0}, {pipe_[0], POLLIN, 0}};
          int rc = ::poll(fds, 2, 30000);
          if (rc < 0 && errno == EINTR) continue;
          if (fds[1].revents != 0) return;  // stopping
          if (rc == 0) {                    // idle: prove the connection is alive
            pqxx::nontransaction tx(c);
            tx.exec("SELECT 1");
            tx.commit();
          } else if (fds[0].revents & (POLLERR | POLLHUP | POLLNVAL)) {
            throw pqxx::broken_connection("listener connection closed");
          }
          c.get_notifs();
        }
      } catch (...) {
        // Reconnect with backoff; waiters meanwhile re-check at their bounded interval.
      }
      std::unique_lock lk(m_);
      cv_.wait_for(lk, backoff_delay(attempt, milliseconds(50), milliseconds(2000)),
                   [this] { return stop_; });
    }
  }

  const std::string conninfo_;
  const std::string channel_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::pair<std::uint64_t, std::size_t>> log_;
  std::atomic<std::uint64_t> seq_{0};
  bool stop_ = false;
  bool started_ = false;
  int pipe_[2] = {-1, -1};
  std::thread th_;
};

// ---- advisory sessions ----

// A dedicated connection whose session holds advisory locks. Operations on it are serialized.
struct session {
  std::mutex m;
  std::unique_ptr<pg_connection> conn;  // null until opened; reset when the session died
  bool dead = false;                    // once dead, its holds are lost for good
  struct hold {
    std::string owner;
    std::uint64_t fence = 0;
  };
  std::map<std::string, hold, std::less<>> holds;  // name -> hold on this session

  // Closes the connection (the server then frees every lock of the session) and forgets holds.
  void kill() {
    dead = true;
    holds.clear();
    conn.reset();
  }
};

class pg_backend final : public sql::engine_backend {
 public:
  pg_backend(const std::string& conninfo, const std::string& shown_url, const options& o,
             sql::dialect d)
      : engine_backend(
            bundle(), std::move(d),
            [conninfo] { return std::make_unique<pg_connection>(conninfo); }, shown_url, o.pool),
        conninfo_(conninfo),
        advisory_(o.mode == "advisory"),
        sessions_(std::max<std::size_t>(1, o.sessions)) {
    if (o.listen) notifier_ = std::make_unique<notifier>(conninfo, notify_channel(o.schema));
    set_auto_migrate(o.auto_migrate);
  }

  ~pg_backend() override {
    notifier_.reset();
    std::lock_guard g(sessions_m_);
    for (auto& s : sessions_) {
      if (!s) continue;
      std::lock_guard sg(s->m);
      s->kill();
    }
  }

  std::optional<lease_info> try_acquire(const lock_request& req) override {
    if (notifier_) tl_snapshot = {this, notifier_->seq()};
    if (!advisory_) return engine_backend::try_acquire(req);
    sql::params p = params_for(req);
    for (unsigned attempt = 0;; ++attempt) {
      auto s = pick_session();
      std::lock_guard g(s->m);
      if (s->dead) continue;  // replaced meanwhile: pick again
      if (auto it = s->holds.find(req.name); it != s->holds.end()) {
        // The session already holds the name: ours again (a retried call) or another owner's
        // of this backend (advisory locks stack within a session, so refuse here).
        if (it->second.owner != req.owner) return std::nullopt;
        return lease_info{req.name, req.owner, it->second.fence, s};
      }
      try {
        if (!s->conn) s->conn = std::make_unique<pg_connection>(conninfo_);
        auto r = s->conn->run(dialect_.acquire, p);
        if (r.empty() || r[0].empty() || !r[0][0]) return std::nullopt;
        auto fence = std::stoull(*r[0][0]);
        s->holds[req.name] = {req.owner, fence};
        return lease_info{req.name, req.owner, fence, s};
      } catch (const sql::transient_error&) {
        if (attempt >= 8) throw;
        std::this_thread::sleep_for(backoff_delay(attempt, milliseconds(1), milliseconds(50)));
      } catch (const connection_error&) {
        s->kill();  // its locks are gone with it; a new session replaces it
        if (attempt >= 1) throw;
      } catch (const backend_error&) {
        // The function failed at an unknown point (a cancelled statement can even skip its
        // exception handler): the session might hold the lock with no row recording it. End
        // the session so that no lock stays held by mistake; its other holds report the loss.
        s->kill();
        throw;
      } catch (const error&) {
        throw;
      } catch (const std::exception& e) {
        throw backend_error(std::string("bad fence from PostgreSQL: ") + e.what());
      }
    }
  }

  bool renew(const lease_info& l, milliseconds d) override {
    if (!advisory_) return engine_backend::renew(l, d);
    auto [s, g] = holding_session(l);
    if (!s) return false;
    try {
      auto r = s->conn->run(dialect_.renew, params_for(l));
      bool ok = !r.empty() && !r[0].empty() && sql::truthy(r[0][0]);
      if (!ok) s->holds.erase(l.name);
      return ok;
    } catch (const connection_error&) {
      s->kill();  // the session died (or was terminated): every lock it held is lost
      return false;
    }
  }

  bool release(const lease_info& l) override {
    if (!advisory_) return engine_backend::release(l);
    auto [s, g] = holding_session(l);
    if (!s) return false;
    try {
      auto r = s->conn->run(dialect_.release, params_for(l));
      s->holds.erase(l.name);
      return !r.empty() && !r[0].empty() && sql::truthy(r[0][0]);
    } catch (const connection_error&) {
      s->kill();
      return false;
    } catch (...) {
      // The outcome is unknown and a session lock must never stay held by mistake: end the
      // session (which frees its locks; its other holds are then reported lost).
      s->kill();
      throw;
    }
  }

  void wait_for_change(std::string_view name, steady_time until) override {
    if (!notifier_) {
      std::this_thread::sleep_until(until);
      return;
    }
    notifier_->ensure_started();
    auto since = tl_snapshot.backend == this ? tl_snapshot.seq : notifier_->seq();
    notifier_->wait(name_hash(name), since, until);
  }

  capabilities caps() const noexcept override {
    auto c = engine_backend::caps();
    c.notify = notifier_ != nullptr;
    c.session_bound = advisory_;
    c.sweep = true;
    return c;
  }

 private:
  // The session of an advisory lease with its lock taken, while it still holds `l` for its
  // owner; a null session when the hold is gone (dead session, forgotten or replaced hold).
  // The lock is the pair's second member, so it is released before the session reference.
  static std::pair<std::shared_ptr<session>, std::unique_lock<std::mutex>> holding_session(
      const lease_info& l) {
    auto s = std::static_pointer_cast<session>(l.state);
    if (!s) return {};
    std::unique_lock g(s->m);
    auto it = s->holds.find(l.name);
    if (s->dead || !s->conn || it == s->holds.end() || it->second.owner != l.owner) return {};
    return {std::move(s), std::move(g)};
  }

  // The parameters of renew/release for a lease.

  std::shared_ptr<session> pick_session() {
    std::lock_guard g(sessions_m_);
    auto i = next_session_++ % sessions_.size();
    auto& s = sessions_[i];
    if (!s || s->dead) s = std::make_shared<session>();
    return s;
  }

  std::string conninfo_;
  bool advisory_;
  std::unique_ptr<notifier> notifier_;
  std::mutex sessions_m_;
  std::vector<std::shared_ptr<session>> sessions_;
  std::size_t next_session_ = 0;
};

bool is_sqlock_param(const std::string& key) {
  return key == "mode" || key == "schema" || key == "execute_role" || key == "migrate" ||
         key == "pool" || key == "sessions" || key == "listen";
}

std::size_t parse_count(const std::string& key, const std::string& v) {
  std::size_t n = 0;
  try {
    std::size_t used = 0;
    n = std::stoul(v, &used);
    if (used != v.size() || n > 1000) throw std::invalid_argument(v);
  } catch (const std::exception&) {
    throw config_error("PostgreSQL URL parameter " + key +
                       " must be a number from 0 to 1000 (got '" + v + "')");
  }
  return n;
}

bool parse_switch(const std::string& key, const std::string& v, const char* on, const char* off) {
  if (v == on || v == "on" || v == "true" || v == "1") return true;
  if (v == off || v == "off" || v == "false" || v == "0") return false;
  throw config_error("PostgreSQL URL parameter " + key + " must be " + on + " or " + off +
                     " (got '" + v + "')");
}

// Checks a libpq connection string without connecting.
void check_conninfo(const std::string& conninfo) {
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
  if (!opts) {
    std::string msg = err ? err : "out of memory";
    if (err) PQfreemem(err);
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    throw config_error("bad PostgreSQL connection string: " + msg);
  }
  PQconninfoFree(opts);
}

}  // namespace

std::string parse_url(const std::string& url_text, options& o) {
  url u = url::parse(url_text);  // syntax check; config_error on malformed input
  if (u.scheme != "postgresql" && u.scheme != "postgres")
    throw config_error("not a PostgreSQL URL: '" + u.redacted() + "'");
  if (u.query.count("mode")) o.mode = u.param("mode");
  if (u.query.count("schema")) o.schema = u.param("schema");
  if (u.query.count("execute_role")) o.execute_role = u.param("execute_role");
  if (u.query.count("migrate"))
    o.auto_migrate = parse_switch("migrate", u.param("migrate"), "auto", "off");
  if (u.query.count("pool")) o.pool = parse_count("pool", u.param("pool"));
  if (u.query.count("sessions")) o.sessions = parse_count("sessions", u.param("sessions"));
  if (u.query.count("listen")) o.listen = parse_switch("listen", u.param("listen"), "on", "off");
  // libpq's URI is the text without sqlock's parameters; the rest is passed through verbatim.
  std::string base = url_text, query;
  if (auto q = url_text.find('?'); q != std::string::npos) {
    base = url_text.substr(0, q);
    query = url_text.substr(q + 1);
    if (auto f = query.find('#'); f != std::string::npos) query.resize(f);
  }
  std::string kept;
  bool has_encoding = false;
  std::size_t start = 0;
  while (start <= query.size() && !query.empty()) {
    auto amp = query.find('&', start);
    std::string kv =
        query.substr(start, amp == std::string::npos ? std::string::npos : amp - start);
    if (!kv.empty()) {
      std::string key = percent_decode(kv.substr(0, kv.find('=')));
      if (!is_sqlock_param(key)) {
        if (key == "client_encoding") has_encoding = true;
        kept += (kept.empty() ? "" : "&") + kv;
      }
    }
    if (amp == std::string::npos) break;
    start = amp + 1;
  }
  if (!has_encoding) kept += std::string(kept.empty() ? "" : "&") + "client_encoding=UTF8";
  kept += "&fallback_application_name=sqlock";
  std::string conninfo = base + "?" + kept;
  check_conninfo(conninfo);
  return conninfo;
}

std::shared_ptr<backend> open(const std::string& conninfo, const options& o) {
  return open_backend(conninfo, conninfo, o);
}

std::shared_ptr<backend> open_backend(const std::string& conninfo, const std::string& shown,
                                      const options& o) {
  auto d = make_dialect(o.mode, o.schema, o.execute_role);  // validates mode, schema, role
  d.notify = o.listen;
  check_conninfo(conninfo);
  return std::make_shared<pg_backend>(conninfo, shown, o, std::move(d));
}

}  // namespace sqlock::postgres

namespace sqlock::backends {
void register_postgres() {
  auto factory = [](const url& u) -> std::shared_ptr<backend> {
    postgres::options o;
    auto conninfo = postgres::parse_url(u.original, o);
    return postgres::open_backend(conninfo, u.original, o);
  };
  register_backend("postgresql", factory);
  register_backend("postgres", factory);
}
}  // namespace sqlock::backends
