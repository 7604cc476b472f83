// The JSON gateway wire of the etcd client: etcd's v3 calls as POST /v3/<service>/<method> with
// a JSON body over HTTP/1.1 keep-alive connections (cpp-httplib, TLS through its OpenSSL
// support), a pool of connections per member; a watch is one HTTP response that never ends, a
// lease keep-alive one request. For members that expose only the gateway (URL `transport=json`).
#include <httplib.h>
#include <pthread.h>
#include <signal.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "etcd_transport.hpp"

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

// etcd's require-leader (the "hasleader" gRPC metadata, which the gateway forwards from this
// header), sent with every call and stream.
constexpr const char* require_leader = "Grpc-Metadata-hasleader";

// An idle watch stream is not a hung call: its read timeout only bounds a dead connection that
// the kernel never reports; stop() ends it at once.
constexpr auto stream_read_timeout = std::chrono::hours(24);

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

class json_transport final : public transport {
 public:
  explicit json_transport(const options& o) : opts_(o) {
    for (const auto& e : o.endpoints) {
      auto m = std::make_unique<member>();
      m->e = e;
      members_.push_back(std::move(m));
    }
  }

  json call(std::size_t member, std::string_view method, const json& body, const std::string& token,
            steady_time deadline) override;
  std::unique_ptr<stream> open_stream(std::size_t member, std::string_view method, const json& body,
                                      const std::string& token,
                                      std::function<void(const json&)> on_message,
                                      std::function<void()> on_end, steady_time deadline) override;

 private:
  struct member {
    endpoint e;
    std::mutex m;
    std::vector<std::unique_ptr<httplib::Client>> idle;
  };
  std::unique_ptr<httplib::Client> make_client(const endpoint& e) const;
  json exchange(member& m, std::unique_ptr<httplib::Client> cli, const std::string& path,
                const std::string& body, const std::string& token, steady_time deadline);

  options opts_;
  std::vector<std::unique_ptr<member>> members_;
};

std::unique_ptr<httplib::Client> json_transport::make_client(const endpoint& e) const {
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

json json_transport::call(std::size_t member_index, std::string_view method, const json& body_json,
                          const std::string& token, steady_time deadline) {
  auto& m = *members_.at(member_index);
  const std::string path = "/v3/" + std::string(method);
  const std::string body = body_json.dump();
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
      auto r = exchange(m, std::move(cli), path, body, token, deadline);
      // A streaming method called once (a keep-alive) answers with its one message in "result".
      if (method == "lease/keepalive") return r.value("result", json::object());
      return r;
    } catch (const stale_connection&) {
      // A kept-alive connection the member had closed: nothing was read from it. Once more on
      // a new connection (the retry of a fresh one is the caller's).
      if (!pooled || clock::now() >= deadline)
        throw connection_error("etcd at " + where(m.e) + " did not answer " + std::string(path));
    }
  }
  throw connection_error("etcd at " + where(m.e) + " did not answer " + std::string(path));
}

json json_transport::exchange(member& m, std::unique_ptr<httplib::Client> cli,
                              const std::string& path, const std::string& body,
                              const std::string& token, steady_time deadline) {
  httplib::Headers headers;
  if (!token.empty()) headers.emplace("Authorization", token);
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
  req.path = path;
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

std::unique_ptr<stream> json_transport::open_stream(std::size_t member_index,
                                                    std::string_view method, const json& body,
                                                    const std::string& token,
                                                    std::function<void(const json&)> on_message,
                                                    std::function<void()> on_end,
                                                    steady_time deadline) {
  auto& m = *members_.at(member_index);
  auto cli = make_client(m.e);
  auto t = left(deadline);
  cli->set_connection_timeout(t);
  cli->set_write_timeout(t);
  cli->set_read_timeout(stream_read_timeout);
  // require-leader: a member without a leader refuses the stream, and ends it once it has had
  // none for three election timeouts, instead of keeping it open and silent.
  httplib::Headers headers{{"Content-Type", "application/json"}, {require_leader, "true"}};
  if (!token.empty()) headers.emplace("Authorization", token);
  return std::make_unique<http_stream>(std::move(cli), "/v3/" + std::string(method), body.dump(),
                                       std::move(headers), std::move(on_message),
                                       std::move(on_end));
}

}  // namespace

std::unique_ptr<transport> make_json_transport(const options& o) {
  return std::make_unique<json_transport>(o);
}

}  // namespace sqlock::etcd::detail
