// The gRPC wire of the etcd client: etcd's v3 services over HTTP/2, one channel per member (TLS
// through gRPC's SSL credentials), every unary call and stream multiplexed on it. A unary call
// carries the caller's deadline; a lease keep-alive is one exchange on its own LeaseKeepAlive
// stream (a request, its reply) with that deadline; the watch is a Watch stream read by its own
// thread. Every call sends the "hasleader" metadata (etcd's require-leader) and, with
// authentication, the "token" metadata. Messages are converted from and to the JSON the
// gateway speaks (etcd_transport.hpp) by protobuf reflection (etcd_proto_json.hpp). A process
// forked after gRPC started here gets the gateway instead (make_transport).
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "etcd_api.grpc.pb.h"
#include "etcd_proto_json.hpp"
#include "etcd_transport.hpp"

namespace sqlock::etcd::detail {

namespace {

namespace pb = etcdserverpb;
using clock = std::chrono::steady_clock;

// A channel reconnects after a failure with a backoff from the first to the cap (gRPC's own
// default rises to 2 minutes: a member back after a restart would be refused that long); one
// connection attempt lasts at least connect_floor_ms (gRPC's default, 20 s, would hold the
// calls of a member whose SYNs are dropped that long, though each ends by its deadline).
constexpr int reconnect_first_ms = 100;
constexpr int reconnect_cap_ms = 1000;
constexpr int connect_floor_ms = 1000;
// HTTP/2 pings while a call (the watch) is open, so a connection that died without a word is
// noticed: not more often than etcd's enforcement policy allows (5 s by default).
constexpr int keepalive_time_ms = 10000;
constexpr int keepalive_timeout_ms = 5000;

std::string read_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw config_error(std::string("etcd URL: cannot read the ") + what + " " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::shared_ptr<grpc::Channel> make_channel(const options& o, const endpoint& e) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, reconnect_first_ms);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, connect_floor_ms);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, reconnect_cap_ms);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, keepalive_time_ms);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, keepalive_timeout_ms);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // etcd answers with up to its --max-request-bytes plus the key-values of a range.
  args.SetMaxReceiveMessageSize(-1);
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (o.tls) {
    grpc::SslCredentialsOptions ssl;
    if (!o.ca_file.empty()) ssl.pem_root_certs = read_file(o.ca_file, "CA file (cacert=)");
    if (!o.cert_file.empty()) {
      ssl.pem_cert_chain = read_file(o.cert_file, "client certificate (cert=)");
      ssl.pem_private_key = read_file(o.key_file, "client key (key=)");
    }
    creds = grpc::SslCredentials(ssl);
  } else {
    creds = grpc::InsecureChannelCredentials();
  }
  const bool v6 = e.host.find(':') != std::string::npos;
  const std::string target = (v6 ? "[" + e.host + "]" : e.host) + ":" + std::to_string(e.port);
  return grpc::CreateCustomChannel(target, creds, args);
}

// A call's context: require-leader, the token, and wait-for-ready. A fail-fast call (gRPC's
// default) on a channel that lost its connection returns UNAVAILABLE at once, and gRPC's
// synchronous API moves a reconnection on only while some thread waits inside a call: once the
// member restarted, a client whose calls all failed fast never read the new connection's
// handshake, and every attempt timed out unread (a waiter stalled until its 30 s deadline,
// chaos.etcd.server). Waiting for ready, a call waits for the connection, bounded by its
// deadline or (the watch) by its caller's wait for the stream to start.
void prepare(grpc::ClientContext& ctx, const std::string& token) {
  ctx.set_wait_for_ready(true);
  ctx.AddMetadata("hasleader", "true");
  if (!token.empty()) ctx.AddMetadata("token", token);
}

std::chrono::system_clock::time_point wall(steady_time deadline) {
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(deadline - clock::now());
}

// etcd's refusal (or the channel's failure) as the exception the gateway expects.
[[noreturn]] void throw_status(const endpoint& e, std::string_view method, const grpc::Status& st) {
  const std::string& message = st.error_message();
  const std::string at = "etcd at " + where(e);
  if (message.find("user name is empty") != std::string::npos)
    throw auth_error(at + " requires authentication: give user:password in the URL");
  switch (st.error_code()) {
    case grpc::StatusCode::PERMISSION_DENIED:
      throw auth_error(at + " refused the operation: " + message);
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      throw connection_error(at + " did not answer " + std::string(method) + " in time");
    case grpc::StatusCode::UNIMPLEMENTED:
      throw config_error(at + " does not serve " + std::string(method) +
                         " over gRPC (a gateway-only endpoint: add transport=json to the URL)");
    case grpc::StatusCode::UNAVAILABLE:
      // etcd's own "unavailable" ("etcdserver: no leader", a member stopping) is an answer the
      // gateway moves on from; the channel's (no connection, reset, handshake) is no answer.
      if (message.rfind("etcdserver:", 0) == 0) throw etcd_error(at + ": " + message, 14);
      throw connection_error(at + " did not answer " + std::string(method) + ": " + message);
    case grpc::StatusCode::CANCELLED:
      throw etcd_error(at + ": " + message, grpc_canceled);
    default:
      throw etcd_error(at + ": " + message, static_cast<int>(st.error_code()));
  }
}

template <class M>
void from_json(const json& body, M& msg, std::string_view method) {
  try {
    json_to_message(body, msg);
  } catch (const backend_error& e) {
    throw backend_error("etcd: the client built a malformed " + std::string(method) +
                        " request: " + e.what());
  }
}

// One member: its channel and the stubs on it.
struct channel_member {
  endpoint e;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<pb::KV::Stub> kv;
  std::unique_ptr<pb::Lease::Stub> lease;
  std::unique_ptr<pb::Cluster::Stub> cluster;
  std::unique_ptr<pb::Maintenance::Stub> maintenance;
  std::unique_ptr<pb::Auth::Stub> auth;
};

template <class Stub, class Req, class Resp>
json unary(const channel_member& m, Stub& stub,
           grpc::Status (Stub::*fn)(grpc::ClientContext*, const Req&, Resp*),
           std::string_view method, const json& body, const std::string& token,
           steady_time deadline) {
  Req req;
  from_json(body, req, method);
  grpc::ClientContext ctx;
  ctx.set_deadline(wall(deadline));
  prepare(ctx, token);
  Resp resp;
  const auto st = (stub.*fn)(&ctx, req, &resp);
  if (!st.ok()) throw_status(m.e, method, st);
  return message_to_json(resp);
}

// One keep-alive: a LeaseKeepAlive stream of one request and its reply.
json keep_alive(const channel_member& m, const json& body, const std::string& token,
                steady_time deadline) {
  pb::LeaseKeepAliveRequest req;
  from_json(body, req, "lease/keepalive");
  grpc::ClientContext ctx;
  ctx.set_deadline(wall(deadline));
  prepare(ctx, token);
  auto call = m.lease->LeaseKeepAlive(&ctx);
  pb::LeaseKeepAliveResponse resp;
  const bool got = call->Write(req, grpc::WriteOptions().set_last_message()) && call->Read(&resp);
  const auto st = call->Finish();
  if (!got) throw_status(m.e, "lease/keepalive", st.ok() ? grpc::Status::CANCELLED : st);
  return message_to_json(resp);
}

// The watch: a Watch stream whose first message is `create`, read by its own thread. The
// state the thread uses is shared with it, so a stream stopped from its own callback (the
// thread detached) outlives its owner safely.
class grpc_watch final : public stream {
 public:
  grpc_watch(const channel_member& m, pb::WatchRequest create, const std::string& token,
             std::function<void(const json&)> on_message, std::function<void()> on_end)
      : s_(std::make_shared<state>()) {
    prepare(s_->ctx, token);
    s_->on_message = std::move(on_message);
    s_->on_end = std::move(on_end);
    th_ = std::thread(
        [s = s_, channel = m.channel, create = std::move(create)] { run(*s, channel, create); });
  }
  ~grpc_watch() override { stop(); }
  grpc_watch(const grpc_watch&) = delete;
  grpc_watch& operator=(const grpc_watch&) = delete;

  void stop() override {
    s_->stopping = true;
    s_->ctx.TryCancel();  // a call not started yet is cancelled as it starts
    if (!th_.joinable()) return;
    if (th_.get_id() == std::this_thread::get_id())
      th_.detach();  // stopped from its own callback: the thread ends after it returns
    else
      th_.join();
  }
  bool ended() const override { return s_->ended; }
  bool wait_started(steady_time deadline) override {
    std::unique_lock lk(s_->m);
    return s_->cv.wait_until(lk, deadline, [&] { return s_->started || s_->ended; }) && s_->started;
  }

 private:
  struct state {
    grpc::ClientContext ctx;
    std::function<void(const json&)> on_message;
    std::function<void()> on_end;
    std::atomic<bool> stopping{false};
    std::atomic<bool> ended{false};
    std::mutex m;
    std::condition_variable cv;
    bool started = false;
  };

  static void run(state& s, const std::shared_ptr<grpc::Channel>& channel,
                  const pb::WatchRequest& create) {
    auto stub = pb::Watch::NewStub(channel);
    auto call = stub->Watch(&s.ctx);
    if (call->Write(create)) {
      pb::WatchResponse resp;
      while (!s.stopping && call->Read(&resp)) {
        {
          std::lock_guard g(s.m);
          s.started = true;
        }
        s.cv.notify_all();
        try {
          s.on_message(message_to_json(resp));
        } catch (...) {
          break;  // an error ends the call
        }
      }
    }
    s.ctx.TryCancel();
    call->Finish();
    {
      std::lock_guard g(s.m);
      s.ended = true;
    }
    s.cv.notify_all();
    if (!s.stopping && s.on_end) s.on_end();
  }

  std::shared_ptr<state> s_;
  std::thread th_;
};

class grpc_transport final : public transport {
 public:
  explicit grpc_transport(const options& o) {
    for (const auto& e : o.endpoints) {
      auto m = std::make_unique<channel_member>();
      m->e = e;
      m->channel = make_channel(o, e);
      m->kv = pb::KV::NewStub(m->channel);
      m->lease = pb::Lease::NewStub(m->channel);
      m->cluster = pb::Cluster::NewStub(m->channel);
      m->maintenance = pb::Maintenance::NewStub(m->channel);
      m->auth = pb::Auth::NewStub(m->channel);
      members_.push_back(std::move(m));
    }
  }

  json call(std::size_t member_index, std::string_view method, const json& body,
            const std::string& token, steady_time deadline) override {
    const channel_member& m = *members_.at(member_index);
    if (method == "kv/txn")
      return unary(m, *m.kv, &pb::KV::Stub::Txn, method, body, token, deadline);
    if (method == "kv/range")
      return unary(m, *m.kv, &pb::KV::Stub::Range, method, body, token, deadline);
    if (method == "kv/put")
      return unary(m, *m.kv, &pb::KV::Stub::Put, method, body, token, deadline);
    if (method == "kv/deleterange")
      return unary(m, *m.kv, &pb::KV::Stub::DeleteRange, method, body, token, deadline);
    if (method == "lease/grant")
      return unary(m, *m.lease, &pb::Lease::Stub::LeaseGrant, method, body, token, deadline);
    if (method == "lease/revoke")
      return unary(m, *m.lease, &pb::Lease::Stub::LeaseRevoke, method, body, token, deadline);
    if (method == "lease/keepalive") return keep_alive(m, body, token, deadline);
    if (method == "lease/timetolive")
      return unary(m, *m.lease, &pb::Lease::Stub::LeaseTimeToLive, method, body, token, deadline);
    if (method == "maintenance/status")
      return unary(m, *m.maintenance, &pb::Maintenance::Stub::Status, method, body, token,
                   deadline);
    if (method == "cluster/member/list")
      return unary(m, *m.cluster, &pb::Cluster::Stub::MemberList, method, body, token, deadline);
    if (method == "auth/authenticate")
      return unary(m, *m.auth, &pb::Auth::Stub::Authenticate, method, body, token, deadline);
    throw backend_error("etcd: the gRPC transport has no call " + std::string(method));
  }

  std::unique_ptr<stream> open_stream(std::size_t member_index, std::string_view method,
                                      const json& body, const std::string& token,
                                      std::function<void(const json&)> on_message,
                                      std::function<void()> on_end, steady_time) override {
    if (method != "watch")
      throw backend_error("etcd: the gRPC transport has no stream " + std::string(method));
    pb::WatchRequest create;
    from_json(body, create, method);
    return std::make_unique<grpc_watch>(*members_.at(member_index), std::move(create), token,
                                        std::move(on_message), std::move(on_end));
  }

 private:
  std::vector<std::unique_ptr<channel_member>> members_;
};

}  // namespace

std::unique_ptr<transport> make_grpc_transport(const options& o) {
  // The process that started gRPC's runtime here (0: none yet).
  static std::atomic<pid_t> runtime_owner{0};
  const pid_t me = ::getpid();
  pid_t owner = 0;
  if (!runtime_owner.compare_exchange_strong(owner, me) && owner != me) return nullptr;
  return std::make_unique<grpc_transport>(o);
}

std::unique_ptr<transport> make_transport(const options& o) {
  if (o.transport == transport_kind::grpc)
    if (auto t = make_grpc_transport(o)) return t;
  return make_json_transport(o);
}

}  // namespace sqlock::etcd::detail
