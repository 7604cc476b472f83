// libpq in non-blocking mode, every wait a poll() on the socket bounded by the deadline.
#include "libpq_connection.hpp"

#include <fcntl.h>
#include <poll.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "errors.hpp"
#include "sql/closing_sessions.hpp"
#include "sqlock/errors.hpp"

namespace sqlock::postgres {

namespace {

std::string field(const PGresult* r, int code) {
  const char* v = PQresultErrorField(r, code);
  return v ? v : "";
}

sql::rows to_rows(const PGresult* r) {
  sql::rows out;
  int n = PQntuples(r), m = PQnfields(r);
  out.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    sql::row x;
    x.reserve(static_cast<std::size_t>(m));
    for (int j = 0; j < m; ++j) {
      if (PQgetisnull(r, i, j))
        x.emplace_back(std::nullopt);
      else
        x.emplace_back(
            std::string(PQgetvalue(r, i, j), static_cast<std::size_t>(PQgetlength(r, i, j))));
    }
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace

libpq_connection::libpq_connection(const std::string& conninfo, steady_time deadline, int stop_fd)
    : stop_fd_(stop_fd), scrub_(conninfo) {
  const std::string what = "cannot connect to PostgreSQL";
  c_ = PQconnectStart(conninfo.c_str());
  if (!c_) throw connection_error(what + ": out of memory");
  // Server notices stay off stderr; a FATAL one while idle means the session is ending.
  PQsetNoticeReceiver(
      c_,
      [](void* self, const PGresult* r) {
        if (field(r, PG_DIAG_SEVERITY_NONLOCALIZED) == "FATAL")
          static_cast<libpq_connection*>(self)->fatal_ = true;
      },
      this);
  try {
    if (PQstatus(c_) == CONNECTION_BAD) fail(what);
    // Before the first poll libpq wants the socket writable (the TCP connect in progress).
    auto st = PGRES_POLLING_WRITING;
    while (st != PGRES_POLLING_OK) {
      if (st == PGRES_POLLING_FAILED) fail(what);
      wait_socket(st == PGRES_POLLING_READING ? POLLIN : POLLOUT, deadline, what);
      st = PQconnectPoll(c_);
    }
    if (PQsetnonblocking(c_, 1) != 0) fail(what);
  } catch (...) {
    close();
    throw;
  }
}

libpq_connection::~libpq_connection() {
  close();
}

int libpq_connection::socket() const {
  return c_ ? PQsocket(c_) : -1;
}

std::string libpq_connection::address() const {
  if (!c_) return {};
  const char* host = PQhost(c_);
  const char* port = PQport(c_);
  std::string h = host ? host : "";
  if (!h.empty() && h[0] == '/') return h + " (socket, port " + (port ? port : "") + ")";
  return h + ":" + (port ? port : "");
}

void libpq_connection::refused(const std::string& what, const std::string& state,
                               const std::string& message) {
  if (state == "25006") throw_read_only(address(), false, message);
  throw_mapped(what, state, message);
}

int libpq_connection::server_pid() const {
  return c_ ? PQbackendPID(c_) : 0;
}

std::string libpq_connection::startup_options() const {
  std::string out;
  if (!c_) return out;
  PQconninfoOption* opts = PQconninfo(c_);
  for (auto* o = opts; o && o->keyword; ++o)
    if (std::strcmp(o->keyword, "options") == 0 && o->val) out = o->val;
  PQconninfoFree(opts);
  return out;
}

void libpq_connection::close() {
  if (!c_) return;
  // The socket outlives PQfinish in a duplicate, watched until the server closes its end.
  const int fd = PQsocket(c_);
  const int kept = ended_ && fd >= 0 ? ::fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
  PQfinish(c_);
  c_ = nullptr;
  if (!ended_) return;
  if (kept >= 0)
    sql::closing_sessions::instance().add(kept, std::exchange(ended_, {}));
  else
    std::exchange(ended_, {})();
}

void libpq_connection::fail(const std::string& what) {
  std::string msg = c_ ? PQerrorMessage(c_) : "connection closed";
  bool connecting = c_ && PQstatus(c_) != CONNECTION_OK && what.rfind("cannot connect", 0) == 0;
  close();
  msg = scrub_(msg);
  if (connecting) throw_connect_failure(what, msg);
  throw connection_error(what + ": " + msg);
}

void libpq_connection::watch_stop(int fd, milliseconds grace) {
  call_stop_fd_ = fd;
  stop_grace_ = grace;
  stop_seen_.reset();
}

void libpq_connection::wait_socket(short events, steady_time deadline, const std::string& what) {
  for (;;) {
    auto now = std::chrono::steady_clock::now();
    // After a stop the statement has `grace` to end (the server cancels it), then it is closed.
    const auto until = stop_seen_ ? std::min(deadline, *stop_seen_ + stop_grace_) : deadline;
    if (now >= until) {
      close();
      throw connection_error(what + (stop_seen_ ? ": stopped, and the server did not end the "
                                                  "statement in time (the connection is closed)"
                                                : ": no answer from the server in time (the "
                                                  "connection is closed)"));
    }
    // Round up so that a wait never ends just before its deadline and spins.
    auto left = std::chrono::ceil<milliseconds>(until - now).count();
    const int call_stop = stop_seen_ ? -1 : call_stop_fd_;
    pollfd fds[3] = {{PQsocket(c_), events, 0}, {stop_fd_, POLLIN, 0}, {call_stop, POLLIN, 0}};
    int rc = ::poll(fds, 3, static_cast<int>(std::min<long long>(left, 1 << 30)));
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) {
      std::string why = std::strerror(errno);
      close();
      throw connection_error(what + ": poll failed: " + why);
    }
    if (stop_fd_ >= 0 && fds[1].revents != 0) {
      close();
      throw connection_error(what + ": stopping");
    }
    if (call_stop >= 0 && fds[2].revents != 0) stop_seen_ = now;
    if (fds[0].revents != 0) return;  // ready, or an error libpq will report
  }
}

void libpq_connection::flush(steady_time deadline, const std::string& what) {
  for (;;) {  // the socket buffer may take the request in parts
    int f = PQflush(c_);
    if (f == 0) return;
    if (f < 0) fail(what);
    wait_socket(POLLIN | POLLOUT, deadline, what);
    if (!PQconsumeInput(c_)) fail(what);
  }
}

PGresult* libpq_connection::next_result(steady_time deadline, const std::string& what) {
  while (PQisBusy(c_)) {
    wait_socket(POLLIN, deadline, what);
    if (!PQconsumeInput(c_)) fail(what);
  }
  return PQgetResult(c_);
}

namespace {

// The first error among the results of one request: SQLSTATE and primary message (CONTEXT and
// QUERY would quote function source).
struct first_error {
  bool failed = false;
  std::string state, message;
  void note(const PGresult* r) {
    if (failed) return;
    failed = true;
    state = field(r, PG_DIAG_SQLSTATE);
    message = field(r, PG_DIAG_MESSAGE_PRIMARY);
    if (message.empty()) message = PQresultErrorMessage(r);
  }
};

}  // namespace

namespace {

// Throws statement_lost when `state` says a named statement is missing or there already.
void check_statement_lost(const std::string& state, const std::string& what,
                          const std::string& message) {
  if (state == "26000" || state == "42P05")
    throw statement_lost(what + ": [" + state + "] " + message);
}

}  // namespace

sql::rows libpq_connection::finish(steady_time deadline, const std::string& what, bool named) {
  flush(deadline, what);
  sql::rows out;
  first_error err;
  while (PGresult* r = next_result(deadline, what)) {
    switch (PQresultStatus(r)) {
      case PGRES_TUPLES_OK:
        out = to_rows(r);
        break;
      case PGRES_COMMAND_OK:
      case PGRES_EMPTY_QUERY:
        out.clear();
        break;
      default:
        err.note(r);
    }
    PQclear(r);
  }
  if (PQstatus(c_) == CONNECTION_BAD) fail(what);
  if (err.failed) {
    if (named) check_statement_lost(err.state, what, scrub_(err.message));
    refused(what, err.state, scrub_(err.message));
  }
  return out;
}

namespace {
// The parameter values as libpq takes them (pointers into `values`, which outlives the call).
std::vector<const char*> c_strings(const std::vector<std::string>& values) {
  std::vector<const char*> out;
  out.reserve(values.size());
  for (const auto& v : values) out.push_back(v.c_str());
  return out;
}
}  // namespace

sql::rows libpq_connection::prepare_and_run(const std::string& name, const std::string& text,
                                            const std::vector<std::string>& values,
                                            steady_time deadline, const std::string& what,
                                            bool& prepared) {
  if (!c_) throw connection_error(what + ": the connection is closed");
  const auto ptrs = c_strings(values);
  const int n = static_cast<int>(values.size());
  if (!PQenterPipelineMode(c_) || !PQsendPrepare(c_, name.c_str(), text.c_str(), n, nullptr) ||
      !PQsendQueryPrepared(c_, name.c_str(), n, ptrs.data(), nullptr, nullptr, 0) ||
      !PQpipelineSync(c_))
    fail(what);
  flush(deadline, what);
  // Results: the prepare's, a null, the query's (or "aborted" after an error), a null, then the
  // pipeline's sync.
  constexpr int queries = 2;
  sql::rows out;
  first_error err;
  int index = 0;  // which query the next result belongs to
  for (bool synced = false; !synced;) {
    PGresult* r = next_result(deadline, what);
    if (!r) {
      if (PQstatus(c_) == CONNECTION_BAD || ++index > queries) fail(what);
      continue;
    }
    switch (PQresultStatus(r)) {
      case PGRES_PIPELINE_SYNC:
        synced = true;
        break;
      case PGRES_COMMAND_OK:
        if (index == 0) prepared = true;
        break;
      case PGRES_TUPLES_OK:
        out = to_rows(r);
        break;
      case PGRES_PIPELINE_ABORTED:
        break;
      default:
        err.note(r);
    }
    PQclear(r);
  }
  if (!PQexitPipelineMode(c_)) fail(what);
  if (err.failed) {
    check_statement_lost(err.state, what, scrub_(err.message));
    refused(what, err.state, scrub_(err.message));
  }
  return out;
}

sql::rows libpq_connection::run_prepared(const std::string& name,
                                         const std::vector<std::string>& values,
                                         steady_time deadline, const std::string& what) {
  if (!c_) throw connection_error(what + ": the connection is closed");
  const auto ptrs = c_strings(values);
  if (!PQsendQueryPrepared(c_, name.c_str(), static_cast<int>(values.size()), ptrs.data(), nullptr,
                           nullptr, 0))
    fail(what);
  return finish(deadline, what, true);
}

sql::rows libpq_connection::run_unnamed(const std::string& text,
                                        const std::vector<std::string>& values,
                                        steady_time deadline, const std::string& what) {
  if (!c_) throw connection_error(what + ": the connection is closed");
  const auto ptrs = c_strings(values);
  if (!PQsendQueryParams(c_, text.c_str(), static_cast<int>(values.size()), nullptr, ptrs.data(),
                         nullptr, nullptr, 0))
    fail(what);
  return finish(deadline, what);
}

sql::rows libpq_connection::run_simple(const std::string& text, steady_time deadline,
                                       const std::string& what) {
  if (!c_) throw connection_error(what + ": the connection is closed");
  if (!PQsendQuery(c_, text.c_str())) fail(what);
  return finish(deadline, what);
}

bool libpq_connection::alive() {
  if (!c_ || fatal_) return false;
  if (!PQconsumeInput(c_) || PQstatus(c_) == CONNECTION_BAD || fatal_) return false;
  // Idle, the server sends only notices, notifications and parameter changes: a result now
  // is an error the server sent before closing the session.
  while (!PQisBusy(c_)) {
    PGresult* r = PQgetResult(c_);
    if (!r) break;
    bool bad = PQresultStatus(r) == PGRES_FATAL_ERROR;
    PQclear(r);
    if (bad) return false;
  }
  return !fatal_;  // parsing what arrived may have delivered a FATAL notice
}

std::vector<std::string> libpq_connection::notifications() {
  std::vector<std::string> out;
  if (!c_) return out;
  while (PGnotify* n = PQnotifies(c_)) {
    out.emplace_back(n->extra ? n->extra : "");
    PQfreemem(n);
  }
  return out;
}

}  // namespace sqlock::postgres
