// What carries etcd's v3 calls to one member: the seam between the gateway (failover across
// members, the auth token, require-leader's retries) and a wire. Two wires: gRPC over HTTP/2
// (etcd_grpc_transport.cpp, the default) and the JSON gateway over HTTP/1.1
// (etcd_json_transport.cpp, URL `transport=json`). Both take and give etcd's messages in the
// proto3 JSON mapping with etcd's field names (keys and values in base64, 64-bit numbers as
// decimal strings), so everything above the seam is the same for both.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "sqlock/backend.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/etcd/etcd.hpp"

namespace sqlock::etcd::detail {

using json = nlohmann::json;

// gRPC status codes etcd answers with (the same on both wires).
constexpr int grpc_canceled = 1;  // a stopping member: "the client connection is closing"
constexpr int grpc_invalid_argument = 3;
constexpr int grpc_permission_denied = 7;
constexpr int grpc_failed_precondition = 9;
constexpr int grpc_unavailable = 14;  // "etcdserver: no leader", ...
constexpr int grpc_unauthenticated = 16;

/// An error reply of etcd itself (not a transport failure): its gRPC code and message.
class etcd_error : public backend_error {
 public:
  etcd_error(const std::string& what, int grpc_code)
      : backend_error(what, std::to_string(grpc_code)), grpc_code_(grpc_code) {}
  /// The gRPC status code (5 = not found, 14 = unavailable, 16 = unauthenticated, ...).
  int grpc_code() const noexcept { return grpc_code_; }

 private:
  int grpc_code_;
};

/// A streaming call in progress (a watch): a thread reads its messages until stop().
class stream {
 public:
  virtual ~stream() = default;
  /// Ends the call and waits for its reader thread.
  virtual void stop() = 0;
  /// True once the call ended by itself (the member closed it, the connection broke).
  virtual bool ended() const = 0;
  /// Waits for the first message until `deadline`; false when none came (the call ended).
  virtual bool wait_started(steady_time deadline) = 0;
};

/// The calls the backend makes, by name: "kv/range", "kv/put", "kv/deleterange", "kv/txn",
/// "lease/grant", "lease/revoke", "lease/keepalive" (one keep-alive: its reply),
/// "lease/timetolive", "maintenance/status", "cluster/member/list", "auth/authenticate"; and
/// the stream "watch".
class transport {
 public:
  virtual ~transport() = default;

  /// Calls `method` on member `member` (an index into options::endpoints) with `body`, sending
  /// `token` (when not empty) and require-leader; the reply. Throws connection_error when the
  /// member did not answer by `deadline`, auth_error or config_error for what the caller must
  /// fix, etcd_error for etcd's other refusals.
  virtual json call(std::size_t member, std::string_view method, const json& body,
                    const std::string& token, steady_time deadline) = 0;

  /// Starts the stream `method` on member `member` with `body` as its first message and
  /// returns at once: `on_message` gets every reply from a reader thread until stop(), and
  /// `on_end` (if set) is called from that thread when the call ends by itself (not after
  /// stop()). `deadline` bounds the setting up of the call, not its life.
  virtual std::unique_ptr<stream> open_stream(std::size_t member, std::string_view method,
                                              const json& body, const std::string& token,
                                              std::function<void(const json&)> on_message,
                                              std::function<void()> on_end,
                                              steady_time deadline) = 0;
};

/// The JSON gateway (HTTP/1.1 keep-alive connections, a pool per member).
std::unique_ptr<transport> make_json_transport(const options& o);
/// gRPC (one HTTP/2 channel per member; every call and stream multiplexed on it); nullptr in a
/// process forked from one that had started gRPC's runtime: that runtime (its threads, its
/// epoll set, its sockets) is the parent's, and a child that calls into it breaks the parent's
/// connections.
std::unique_ptr<transport> make_grpc_transport(const options& o);
/// The wire `o` asks for: gRPC where it can run (see make_grpc_transport), else the gateway.
std::unique_ptr<transport> make_transport(const options& o);

/// "host:port" of a member, for messages.
std::string where(const endpoint& e);

}  // namespace sqlock::etcd::detail
