// MySQL/MariaDB backend: URL parsing, the engine backend over the connector driver, and the
// advisory mode (GET_LOCK on a dedicated session per hold, waits blocking in the server).
#include <algorithm>
#include <mutex>
#include <thread>

#include "connector.hpp"
#include "sqlock/mysql/dialect.hpp"
#include "sqlock/mysql/mysql.hpp"
#include "sqlock/random.hpp"
#include "sqlock/sql_engine.hpp"
#include "sqlock/url.hpp"

namespace sqlock {
namespace mysql {
namespace {

// A dedicated server session (advisory mode): holds at most one GET_LOCK lock for `owner`.
struct session {
  std::mutex m;
  std::unique_ptr<sql::connection> conn;  // null once closed
  std::string owner;                      // owner token of the hold it carries ("" = none)
};

std::string shown_url(const options& o) {
  std::string s = "mysql://" + percent_encode(o.user) + "@";
  s += o.socket.empty() ? o.host + ":" + std::to_string(o.port) : "localhost";
  s += "/" + percent_encode(o.database);
  if (!o.socket.empty()) s += "?socket=" + percent_encode(o.socket);
  return s;
}

class mysql_backend final : public sql::engine_backend {
 public:
  explicit mysql_backend(const options& o, std::string url_text)
      : engine_backend(
            sql_bundle(), make_dialect(o.mode), [o] { return detail::open_connection(o); },
            url_text.empty() ? shown_url(o) : std::move(url_text), o.pool),
        opts_(o),
        advisory_(o.mode == "advisory") {
    set_auto_migrate(o.auto_migrate);
    // Advisory waits block in the server in chunks that finish well before the read timeout.
    if (opts_.read_timeout.count() > 0)
      wait_chunk_ = std::clamp(opts_.read_timeout / 2, milliseconds(500), milliseconds(10000));
  }

  std::string kind() const override { return "mysql"; }

  std::optional<lease_info> try_acquire(const lock_request& req) override {
    if (!advisory_) return engine_backend::try_acquire(req);
    return advisory_attempt(req, milliseconds(0));
  }

  std::optional<lease_info> acquire(const lock_request& req, steady_time deadline,
                                    const wait_policy& policy) override {
    if (!advisory_) return engine_backend::acquire(req, deadline, policy);
    if (auto l = advisory_attempt(req, milliseconds(0))) return l;
    // Busy: GET_LOCK with a timeout waits in the server and is woken by the release itself:
    // no polling, and the handoff costs one server wake-up.
    for (;;) {
      auto now = std::chrono::steady_clock::now();
      if (now >= deadline) return std::nullopt;
      auto left = std::chrono::ceil<milliseconds>(deadline - now);
      if (auto l = advisory_attempt(req, std::min(left, wait_chunk_))) {
        l->waited = true;
        return l;
      }
    }
  }

  bool renew(const lease_info& l, milliseconds d) override {
    if (!advisory_) return engine_backend::renew(l, d);
    auto s = std::static_pointer_cast<session>(l.state);
    if (!s) return false;
    std::lock_guard g(s->m);
    if (!s->conn || s->owner != l.owner) return false;
    try {
      auto r = s->conn->run(dialect_.renew, params_for(l));
      bool ok = !r.empty() && !r[0].empty() && sql::truthy(r[0][0]);
      if (!ok) close(*s);  // whatever the session still has is not our hold any more
      return ok;
    } catch (const connection_error&) {
      // The session is gone, and GET_LOCK locks die with their session: the hold is lost.
      close(*s);
      return false;
    }
  }

  bool release(const lease_info& l) override {
    if (!advisory_) return engine_backend::release(l);
    auto s = std::static_pointer_cast<session>(l.state);
    if (!s) return false;
    std::unique_lock g(s->m);
    if (!s->conn || s->owner != l.owner) return false;
    bool ok = false;
    try {
      auto r = s->conn->run(dialect_.release, params_for(l));
      ok = !r.empty() && !r[0].empty() && sql::truthy(r[0][0]);
    } catch (const connection_error&) {
      close(*s);  // the server frees the lock with the session
      return false;
    } catch (...) {
      close(*s);  // never leave the lock held: ending the session frees it
      return true;
    }
    s->owner.clear();
    if (!ok) {
      close(*s);
      return false;
    }
    g.unlock();
    give_back(std::move(s));
    return true;
  }

  capabilities caps() const noexcept override {
    auto c = engine_backend::caps();
    if (advisory_) c.session_bound = true;
    return c;
  }

 private:
  static void close(session& s) {
    s.owner.clear();
    s.conn.reset();
  }

  std::shared_ptr<session> take_session(bool fresh) {
    if (!fresh) {
      std::lock_guard g(sessions_mutex_);
      if (!idle_sessions_.empty()) {
        auto s = std::move(idle_sessions_.back());
        idle_sessions_.pop_back();
        return s;
      }
    }
    auto s = std::make_shared<session>();
    s->conn = detail::open_connection(opts_);
    return s;
  }

  void give_back(std::shared_ptr<session> s) {
    std::lock_guard g(sessions_mutex_);
    if (idle_sessions_.size() < std::max<std::size_t>(1, opts_.pool))
      idle_sessions_.push_back(std::move(s));
  }

  std::optional<lease_info> advisory_attempt(const lock_request& req, milliseconds wait) {
    sql::params p = params_for(req);
    p.lease_ms = wait.count();  // advisory: the server-side wait
    bool fresh = false;
    for (unsigned attempt = 0;; ++attempt) {
      auto s = take_session(fresh);
      std::unique_lock g(s->m);
      sql::rows r;
      try {
        r = s->conn->run(dialect_.acquire, p);
      } catch (const sql::transient_error&) {
        // The procedure released what it took before failing: the session is clean.
        g.unlock();
        if (attempt >= 20) throw;
        give_back(std::move(s));
        std::this_thread::sleep_for(backoff_delay(attempt, milliseconds(1), milliseconds(50)));
        continue;
      } catch (const connection_error&) {
        close(*s);  // an idle session may have timed out: one retry on a new one
        if (fresh) throw;
        fresh = true;
        continue;
      } catch (...) {
        close(*s);  // unknown state: ending the session frees anything it took
        throw;
      }
      if (!r.empty() && !r[0].empty() && r[0][0]) {
        std::uint64_t fence = 0;
        try {
          fence = std::stoull(*r[0][0]);
        } catch (const std::exception&) {
          close(*s);
          throw backend_error("bad fence '" + *r[0][0] + "' from sqlock_advisory_acquire");
        }
        s->owner = req.owner;
        g.unlock();
        return lease_info{req.name, req.owner, fence, std::move(s)};
      }
      g.unlock();
      give_back(std::move(s));
      return std::nullopt;
    }
  }

  options opts_;
  bool advisory_ = false;
  milliseconds wait_chunk_{10000};
  std::mutex sessions_mutex_;
  std::vector<std::shared_ptr<session>> idle_sessions_;
};

std::size_t parse_count(const url& u, const std::string& key) {
  try {
    std::size_t pos = 0;
    auto v = std::stoul(u.param(key), &pos);
    if (pos != u.param(key).size()) throw std::invalid_argument(key);
    return static_cast<std::size_t>(v);
  } catch (const std::exception&) {
    throw config_error("MySQL URL parameter " + key + " must be a number (got '" + u.param(key) +
                       "')");
  }
}

}  // namespace

options parse_url(const std::string& url_text) {
  url u = url::parse(url_text);
  if (u.scheme != "mysql" && u.scheme != "mariadb")
    throw config_error("not a mysql:// or mariadb:// URL: " + u.redacted());
  u.check_params({"mode", "socket", "pool", "connect_timeout", "read_timeout", "migrate",
                  "ssl_mode", "ssl_ca", "ssl_capath", "ssl_cert", "ssl_key", "ssl_cipher",
                  "ssl_crl", "tls_version"});
  if (u.hosts.size() > 1)
    throw config_error("MySQL URL takes one host (got " + std::to_string(u.hosts.size()) + " in '" +
                       u.redacted() + "'); use a proxy or the primary's address");
  options o;
  if (!u.hosts.empty()) {
    if (!u.hosts[0].host.empty()) o.host = u.hosts[0].host;
    if (u.hosts[0].port > 0) o.port = u.hosts[0].port;
  }
  o.user = u.user.value_or("");
  o.password = u.password.value_or("");
  o.database = u.path;
  while (!o.database.empty() && o.database.front() == '/') o.database.erase(0, 1);
  if (o.database.empty() || o.database.find('/') != std::string::npos)
    throw config_error(
        "MySQL URL needs the database holding the sqlock schema: mysql://user@host/db (got '" +
        u.redacted() + "')");
  o.mode = u.param("mode", "pessimistic");
  if (!valid_mode(o.mode))
    throw config_error("MySQL mode must be pessimistic, optimistic or advisory (got '" + o.mode +
                       "')");
  o.socket = u.param("socket");
  if (u.query.count("pool")) o.pool = parse_count(u, "pool");
  if (u.query.count("connect_timeout"))
    o.connect_timeout = parse_duration(u.param("connect_timeout"));
  if (u.query.count("read_timeout")) o.read_timeout = parse_duration(u.param("read_timeout"));
  if (u.query.count("migrate")) {
    auto m = u.param("migrate");
    if (m != "auto" && m != "off")
      throw config_error("MySQL URL parameter migrate must be auto or off (got '" + m + "')");
    o.auto_migrate = m == "auto";
  }
  o.ssl_mode = u.param("ssl_mode");
  o.ssl_ca = u.param("ssl_ca");
  o.ssl_capath = u.param("ssl_capath");
  o.ssl_cert = u.param("ssl_cert");
  o.ssl_key = u.param("ssl_key");
  o.ssl_cipher = u.param("ssl_cipher");
  o.ssl_crl = u.param("ssl_crl");
  o.tls_version = u.param("tls_version");
  static const std::vector<std::string> ssl_modes = {"",         "disabled",  "preferred",
                                                     "required", "verify_ca", "verify_identity"};
  if (std::find(ssl_modes.begin(), ssl_modes.end(), o.ssl_mode) == ssl_modes.end())
    throw config_error(
        "MySQL ssl_mode must be disabled, preferred, required, verify_ca or "
        "verify_identity (got '" +
        o.ssl_mode + "')");
  return o;
}

namespace {
std::shared_ptr<backend> open_with_url(const options& o, std::string url_text) {
  if (!valid_mode(o.mode))
    throw config_error("MySQL mode must be pessimistic, optimistic or advisory (got '" + o.mode +
                       "')");
  if (o.database.empty())
    throw config_error("MySQL options need the database holding the sqlock schema");
  if (o.connect_timeout.count() < 0 || o.read_timeout.count() < 0)
    throw config_error("MySQL timeouts must be >= 0");
  return std::make_shared<mysql_backend>(o, std::move(url_text));
}
}  // namespace

std::shared_ptr<backend> open(const options& opts) {
  return open_with_url(opts, {});
}

}  // namespace mysql

namespace backends {
void register_mysql() {
  auto factory = [](const url& u) -> std::shared_ptr<backend> {
    return mysql::open_with_url(mysql::parse_url(u.original), u.original);
  };
  register_backend("mysql", factory);
  register_backend("mariadb", factory);
}
}  // namespace backends

}  // namespace sqlock
