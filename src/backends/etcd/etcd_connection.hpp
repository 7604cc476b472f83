// The etcd v3 JSON gateway client: unary calls (POST /v3/<service>/<method> with a JSON body)
// and streaming calls (watch) over HTTP/1.1 keep-alive connections, with a pool per member,
// failover across the members of the URL, user/password authentication (a token refreshed when
// etcd rejects it) and TLS. Every call is bounded by its deadline. Keys and values travel in
// base64, 64-bit numbers as decimal strings, as the gateway's protobuf-to-JSON mapping wants.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "sqlock/backend.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/etcd/etcd.hpp"

namespace httplib {
class Client;
}

namespace sqlock::etcd::detail {

using json = nlohmann::json;

/// Base64 of `bytes` (standard alphabet, padded).
std::string b64(std::string_view bytes);
/// Bytes of base64 `text`; backend_error when it is malformed.
std::string unb64(std::string_view text);
/// The first key after every key that starts with `p` (etcd's "prefix end").
std::string prefix_end(std::string p);
/// A 64-bit number the gateway sent as a decimal string (or an integer); 0 when absent;
/// backend_error for anything else.
std::int64_t num(const json& j, const char* key);

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
  /// Ends the call (closes its connection) and waits for its reader thread.
  virtual void stop() = 0;
  /// True once the call ended by itself (the member closed it, the connection broke).
  virtual bool ended() const = 0;
  /// Waits for the first message until `deadline`; false when none came (the call ended).
  virtual bool wait_started(steady_time deadline) = 0;
};

class gateway {
 public:
  explicit gateway(const options& o);
  ~gateway();
  gateway(const gateway&) = delete;
  gateway& operator=(const gateway&) = delete;

  /// POST /v3/`path` with `body` to a member, by `deadline`; the reply. Tries the next member
  /// when one does not answer or has no leader. Throws connection_error when no member
  /// answered in time, auth_error when authentication fails, etcd_error for etcd's refusals.
  json call(std::string_view path, const json& body, steady_time deadline);

  /// Starts a streaming POST /v3/`path` on its own connection: `on_message` gets every
  /// message (the gateway's `result` object) from a reader thread until stop(), and `on_end`
  /// (if set) is called from that thread when the call ends by itself (the member closed it,
  /// the connection broke; not after stop()). With `confirm`, waits for the first message and
  /// throws connection_error when no member sends one by `deadline`; without, returns at once.
  std::unique_ptr<stream> open_stream(std::string_view path, const json& body,
                                      std::function<void(const json&)> on_message,
                                      std::function<void()> on_end, steady_time deadline,
                                      bool confirm = true);

  /// The I/O bound of one request (URL `timeout=`).
  milliseconds timeout() const { return opts_.timeout; }

 private:
  struct member;
  std::unique_ptr<httplib::Client> make_client(const endpoint& e) const;
  json call_member(member& m, std::string_view path, const std::string& body, steady_time deadline);
  json exchange(member& m, std::unique_ptr<httplib::Client> cli, std::string_view path,
                const std::string& body, steady_time deadline);
  std::string token(steady_time deadline, bool refresh);

  options opts_;
  std::vector<std::unique_ptr<member>> members_;
  std::atomic<std::size_t> preferred_{0};  // the member that answered last
  std::mutex token_m_;
  std::string token_;  // "" = not authenticated yet (or no authentication)
};

}  // namespace sqlock::etcd::detail
