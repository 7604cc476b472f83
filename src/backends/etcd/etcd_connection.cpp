#include "etcd_connection.hpp"

#include <httplib.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <signal.h>

#include <charconv>
#include <condition_variable>
#include <cstdint>
#include <thread>

#include "sqlock/errors.hpp"
#include "sqlock/random.hpp"

namespace sqlock::etcd::detail {

namespace {

using clock = std::chrono::steady_clock;

// A pooled keep-alive connection that the member had closed: nothing was read from it.
struct stale_connection {};

// OpenSSL writes with write(2), not send(MSG_NOSIGNAL): a write to a connection the member has
// closed raises SIGPIPE, which would end the application. For the duration of a request the
// calling thread blocks SIGPIPE and consumes one it caused, so the write fails with EPIPE
// instead; the application's own disposition of SIGPIPE is left alone.
class sigpipe_guard {
 public:
  sigpipe_guard() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~sigpipe_guard() {
    if (!was_pending_) {
      timespec zero{0, 0};
      while (sigtimedwait(&pipe_, nullptr, &zero) == SIGPIPE) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  sigpipe_guard(const sigpipe_guard&) = delete;
  sigpipe_guard& operator=(const sigpipe_guard&) = delete;

 private:
  sigset_t pipe_{}, old_{};
  bool was_pending_ = false;
};

// gRPC status codes the gateway reports in `code`.
constexpr int grpc_canceled = 1;  // a stopping member's gateway: "the client connection is closing"
constexpr int grpc_invalid_argument = 3;
constexpr int grpc_permission_denied = 7;
constexpr int grpc_unavailable = 14;
constexpr int grpc_unauthenticated = 16;

// etcd's require-leader (the "hasleader" gRPC metadata, which the gateway forwards from this
// header), sent with every call and stream: a member without a leader (cut off from its peers,
// or its peers stopped) refuses at once with "no leader" (unavailable), so the client moves to
// a member that has one, instead of waiting on it until etcd's own request timeout.
constexpr const char* require_leader = "Grpc-Metadata-hasleader";
// While some member said "no leader" (an election in progress), every member is tried again
// after a jittered pause doubling from the first to the cap, for up to one request's timeout.
constexpr auto no_leader_pause_first = std::chrono::milliseconds(20);
constexpr auto no_leader_pause_cap = std::chrono::milliseconds(500);

// With more than one member, one member's attempt lasts at most the request timeout / 5 (and
// not under this floor): a member that accepts connections but does not answer — a restarted
// etcd 3.4 member serves nothing until it has published itself through raft, which a lost
// publish puts off by 6 s — is left for the next one instead of holding the call until its
// deadline (a waiter's keep-alive thus outlived its lease: chaos.etcd.cluster, a takeover 6 s
// after a majority outage). With one member there is nothing to move to: its attempt may take
// the whole deadline.
constexpr auto member_attempt_floor = std::chrono::milliseconds(500);

// An idle watch stream is not a hung call: its read timeout only bounds a dead connection that
// the kernel never reports; stop() ends it at once.
constexpr auto stream_read_timeout = std::chrono::hours(24);

std::string where(const endpoint& e) {
  return e.host + ":" + std::to_string(e.port);
}

// What is left until `deadline`, at least 1 ms (httplib treats 0 as "no timeout").
std::chrono::microseconds left(steady_time deadline) {
  auto d = std::chrono::duration_cast<std::chrono::microseconds>(deadline - clock::now());
  return std::max(d, std::chrono::microseconds(1000));
}

// etcd's error reply as an exception: auth failures become auth_error, the rest etcd_error.
[[noreturn]] void throw_reply(const endpoint& e, int status, const std::string& body) {
  std::string message = "HTTP " + std::to_string(status);
  int code = 0;
  try {
    auto j = json::parse(body);
    // A streaming method (lease/keepalive, watch) reports its error as a stream chunk,
    // {"error": {"grpc_code": 14, "message": "etcdserver: no leader", ...}}; a unary one as
    // {"error": "...", "message": "...", "code": 14}.
    auto err = j.find("error");
    if (err != j.end() && err->is_object()) {
      message = err->value("message", message);
      code = err->value("grpc_code", 0);
    } else {
      message = j.value("message", j.value("error", message));
      code = j.value("code", 0);
    }
  } catch (const json::exception&) {
    // Not JSON (a proxy's page): keep the HTTP status.
  }
  if (message.find("user name is empty") != std::string::npos)
    throw auth_error("etcd at " + where(e) +
                     " requires authentication: give user:password in "
                     "the URL");
  if (code == grpc_permission_denied)
    throw auth_error("etcd at " + where(e) + " refused the operation: " + message);
  if (status == 404 && code == 0)
    throw config_error("etcd at " + where(e) +
                       " has no v3 JSON gateway (etcd 3.4 or newer "
                       "serves it under /v3/ on the client port)");
  throw etcd_error("etcd at " + where(e) + ": " + message, code);
}

class http_stream final : public stream {
 public:
  http_stream(std::unique_ptr<httplib::Client> cli, std::string path, std::string body,
              httplib::Headers headers, std::function<void(const json&)> on_message,
              std::function<void()> on_end)
      : cli_(std::move(cli)), on_message_(std::move(on_message)), on_end_(std::move(on_end)) {
    th_ = std::thread([this, path = std::move(path), body = std::move(body),
                       headers = std::move(headers)] { run(path, body, headers); });
  }
  ~http_stream() override { stop(); }
  http_stream(const http_stream&) = delete;
  http_stream& operator=(const http_stream&) = delete;

  void stop() override {
    stopping_ = true;
    if (!th_.joinable()) return;
    if (th_.get_id() == std::this_thread::get_id()) {
      th_.detach();  // stopped from its own callback: the thread ends after it returns
      return;
    }
    // Closing the connection ends a call in progress; a call still connecting has no socket
    // to close yet, so close again until the reader is done.
    std::unique_lock lk(m_);
    while (!ended_) {
      lk.unlock();
      cli_->stop();
      lk.lock();
      cv_.wait_for(lk, std::chrono::milliseconds(2), [&] { return ended_.load(); });
    }
    lk.unlock();
    th_.join();
  }
  bool ended() const override { return ended_; }

  bool wait_started(steady_time deadline) override {
    std::unique_lock lk(m_);
    return cv_.wait_until(lk, deadline, [&] { return started_ || ended_; }) && started_;
  }

 private:
  void run(const std::string& path, const std::string& body, const httplib::Headers& headers) {
    sigpipe_guard quiet;
    httplib::Request req;
    req.method = "POST";
    req.path = path;
    req.headers = headers;
    req.body = body;
    req.content_receiver = [this](const char* data, size_t n, uint64_t, uint64_t) {
      buffer_.append(data, n);
      for (auto nl = buffer_.find('\n'); nl != std::string::npos; nl = buffer_.find('\n')) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        if (line.empty()) continue;
        json j = json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.contains("result")) return false;  // an error ends the call
        {
          std::lock_guard g(m_);
          started_ = true;
        }
        cv_.notify_all();
        try {
          on_message_(j["result"]);
        } catch (...) {
          return false;
        }
      }
      return !stopping_;
    };
    cli_->send(req);
    {
      std::lock_guard g(m_);
      ended_ = true;
    }
    cv_.notify_all();
    if (!stopping_ && on_end_) on_end_();
  }

  std::unique_ptr<httplib::Client> cli_;
  std::function<void(const json&)> on_message_;
  std::function<void()> on_end_;
  std::string buffer_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> ended_{false};
  std::mutex m_;
  std::condition_variable cv_;
  bool started_ = false;
  std::thread th_;
};

}  // namespace

std::string b64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()),
                          static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::string unb64(std::string_view text) {
  if (text.size() % 4 != 0) throw backend_error("etcd sent malformed base64");
  std::string out(3 * text.size() / 4, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()),
                          static_cast<int>(text.size()));
  if (n < 0) throw backend_error("etcd sent malformed base64");
  std::size_t pad = 0;
  if (!text.empty() && text.back() == '=') ++pad;
  if (text.size() > 1 && text[text.size() - 2] == '=') ++pad;
  out.resize(static_cast<std::size_t>(n) - pad);
  return out;
}

std::string prefix_end(std::string p) {
  while (!p.empty()) {
    auto c = static_cast<unsigned char>(p.back());
    if (c < 0xFF) {
      p.back() = static_cast<char>(c + 1);
      return p;
    }
    p.pop_back();
  }
  return std::string(1, '\0');  // every key
}

std::int64_t num(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return 0;
  const auto bad = [&] {
    return backend_error(std::string("etcd sent a bad number in '") + key + "'");
  };
  // Not a float (its conversion may overflow) nor an unsigned beyond int64.
  if (it->is_number_unsigned() && it->get<std::uint64_t>() > INT64_MAX) throw bad();
  if (it->is_number_integer()) return it->get<std::int64_t>();
  if (!it->is_string()) throw bad();
  const auto& s = it->get_ref<const std::string&>();
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) throw bad();
  return v;
}

struct gateway::member {
  endpoint e;
  std::mutex m;
  std::vector<std::unique_ptr<httplib::Client>> idle;
};

gateway::gateway(const options& o) : opts_(o) {
  for (const auto& e : o.endpoints) {
    auto m = std::make_unique<member>();
    m->e = e;
    members_.push_back(std::move(m));
  }
}

gateway::~gateway() = default;

std::unique_ptr<httplib::Client> gateway::make_client(const endpoint& e) const {
  std::string base = std::string(opts_.tls ? "https://" : "http://") +
                     (e.host.find(':') != std::string::npos ? "[" + e.host + "]" : e.host) + ":" +
                     std::to_string(e.port);
  auto cli = opts_.cert_file.empty()
                 ? std::make_unique<httplib::Client>(base)
                 : std::make_unique<httplib::Client>(base, opts_.cert_file, opts_.key_file);
  if (opts_.tls) {
    if (!opts_.ca_file.empty()) cli->set_ca_cert_path(opts_.ca_file);
    cli->enable_server_certificate_verification(true);
  }
  cli->set_keep_alive(true);
  cli->set_tcp_nodelay(true);
  return cli;
}

json gateway::call_member(member& m, std::string_view path, const std::string& body,
                          steady_time deadline) {
  for (bool pooled = true; pooled;) {
    std::unique_ptr<httplib::Client> cli;
    {
      std::lock_guard g(m.m);
      if (!m.idle.empty()) {
        cli = std::move(m.idle.back());
        m.idle.pop_back();
      }
    }
    pooled = cli != nullptr;
    if (!cli) cli = make_client(m.e);
    try {
      return exchange(m, std::move(cli), path, body, deadline);
    } catch (const stale_connection&) {
      // A kept-alive connection the member had closed: nothing was read from it. Once more on
      // a new connection (the retry of a fresh one is the caller's).
      if (!pooled || clock::now() >= deadline)
        throw connection_error("etcd at " + where(m.e) + " did not answer " + std::string(path));
    }
  }
  throw connection_error("etcd at " + where(m.e) + " did not answer " + std::string(path));
}

json gateway::exchange(member& m, std::unique_ptr<httplib::Client> cli, std::string_view path,
                       const std::string& body, steady_time deadline) {
  httplib::Headers headers;
  if (!opts_.user.empty() && path != "/v3/auth/authenticate")
    headers.emplace("Authorization", token(deadline, false));
  auto t = left(deadline);
  cli->set_connection_timeout(t);
  cli->set_read_timeout(t);
  cli->set_write_timeout(t);
  // The gateway ends its error replies with an HTTP trailer (Grpc-Trailer-Content-Type), which
  // cpp-httplib 0.11 cannot parse: it reports a read error after the whole body has arrived.
  // So the status and body are collected as they come, and such a reply is still used (its
  // connection is not reused).
  httplib::Request req;
  req.method = "POST";
  req.path = std::string(path);
  req.headers = std::move(headers);
  req.headers.emplace("Content-Type", "application/json");
  req.headers.emplace(require_leader, "true");
  req.body = body;
  int status = 0;
  std::string reply;
  req.response_handler = [&](const httplib::Response& r) {
    status = r.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    reply.append(data, n);
    return true;
  };
  httplib::Result res = [&] {
    sigpipe_guard quiet;
    return cli->send(req);
  }();
  bool complete = static_cast<bool>(res);
  if (!complete && status == 0 && reply.empty() && res.error() != httplib::Error::Connection &&
      clock::now() < deadline)
    throw stale_connection();
  if (!complete && (status == 0 || !json::accept(reply)))
    throw connection_error("etcd at " + where(m.e) + " did not answer " + std::string(path) + ": " +
                           httplib::to_string(res.error()));
  if (complete) {
    std::lock_guard g(m.m);
    m.idle.push_back(std::move(cli));
  }
  if (status != 200) throw_reply(m.e, status, reply);
  json j = json::parse(reply, nullptr, false);
  if (j.is_discarded()) throw backend_error("etcd at " + where(m.e) + " sent malformed JSON");
  if (j.contains("error")) throw_reply(m.e, 500, reply);
  return j;
}

json gateway::call(std::string_view path, const json& body, steady_time deadline) {
  const std::string text = body.dump();
  const std::string full = "/v3/" + std::string(path);
  const std::size_t n = members_.size();
  const std::size_t first = preferred_.load();
  bool refreshed = false;
  bool leaderless = false;  // a member had no leader in this round
  const auto began = clock::now();
  std::exception_ptr last;
  unsigned round = 0;  // pauses so far
  for (std::size_t i = 0; clock::now() < deadline;) {
    if (i == n) {
      // Every member tried: when one of them had no leader, the cluster may be electing one;
      // for at most one request's timeout (as etcd itself would wait), then the caller decides.
      if (!leaderless || clock::now() >= began + opts_.timeout) break;
      const auto pause = backoff_delay(round++, no_leader_pause_first, no_leader_pause_cap);
      std::this_thread::sleep_until(
          std::min({deadline, began + opts_.timeout, clock::now() + pause}));
      i = 0;
      leaderless = false;
      continue;
    }
    std::size_t idx = (first + i) % n;
    const auto attempt_end =
        n == 1 ? deadline
               : std::min(deadline, clock::now() + std::max<std::chrono::milliseconds>(
                                                       member_attempt_floor, opts_.timeout / 5));
    try {
      auto r = call_member(*members_[idx], full, text, attempt_end);
      preferred_ = idx;
      return r;
    } catch (const etcd_error& e) {
      if (e.grpc_code() == grpc_unauthenticated && !opts_.user.empty() && !refreshed) {
        refreshed = true;  // the token expired: authenticate again, once
        token(deadline, true);
        continue;
      }
      if (e.grpc_code() != grpc_unavailable && e.grpc_code() != grpc_canceled) throw;
      // No leader, or the member is stopping: the next member. Should none serve it, this is
      // the cluster out of reach for now (a connection_error: retried within the deadline),
      // not an answer.
      last = std::make_exception_ptr(connection_error(e.what()));
      leaderless = true;
    } catch (const connection_error&) {
      last = std::current_exception();
    }
    ++i;
  }
  if (last) std::rethrow_exception(last);
  throw connection_error("etcd: no member answered " + full + " in time");
}

std::string gateway::token(steady_time deadline, bool refresh) {
  std::lock_guard g(token_m_);
  if (!token_.empty() && !refresh) return token_;
  json body = {{"name", opts_.user}, {"password", opts_.password}};
  std::exception_ptr last;
  for (auto& m : members_) {
    try {
      auto r = call_member(*m, "/v3/auth/authenticate", body.dump(), deadline);
      token_ = r.value("token", "");
      return token_;
    } catch (const etcd_error& e) {
      if (e.grpc_code() == grpc_unavailable) {
        last = std::current_exception();
        continue;
      }
      if (e.grpc_code() == grpc_invalid_argument || e.grpc_code() == grpc_unauthenticated ||
          e.grpc_code() == 9 /* failed precondition: authentication is not enabled */)
        throw auth_error("etcd authentication of user '" + opts_.user + "' failed: " + e.what());
      throw;
    } catch (const connection_error&) {
      last = std::current_exception();
    }
  }
  if (last) std::rethrow_exception(last);
  throw connection_error("etcd: no member to authenticate with");
}

std::unique_ptr<stream> gateway::open_stream(std::string_view path, const json& body,
                                             std::function<void(const json&)> on_message,
                                             std::function<void()> on_end, steady_time deadline,
                                             bool confirm) {
  const std::size_t n = members_.size();
  const std::size_t first = preferred_.load();
  for (std::size_t i = 0; i < n && clock::now() < deadline; ++i) {
    auto& m = *members_[(first + i) % n];
    auto cli = make_client(m.e);
    auto t = left(deadline);
    cli->set_connection_timeout(t);
    cli->set_write_timeout(t);
    cli->set_read_timeout(stream_read_timeout);
    // require-leader: a member without a leader refuses the stream, and ends it once it has
    // had none for three election timeouts, instead of keeping it open and silent.
    httplib::Headers headers{{"Content-Type", "application/json"}, {require_leader, "true"}};
    if (!opts_.user.empty()) headers.emplace("Authorization", token(deadline, false));
    auto s = std::make_unique<http_stream>(std::move(cli), "/v3/" + std::string(path), body.dump(),
                                           std::move(headers), on_message, on_end);
    if (!confirm || s->wait_started(deadline)) return s;
    s->stop();
  }
  throw connection_error("etcd: no member accepted a " + std::string(path) + " stream in time");
}

}  // namespace sqlock::etcd::detail
