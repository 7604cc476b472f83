// The etcd v3 client the backend calls through: unary calls and streams (watch) on a member's
// transport (gRPC, or the JSON gateway: etcd_transport.hpp), with failover across the members
// of the URL, etcd's require-leader retries and user/password authentication (a token refreshed
// when etcd rejects it). Every call is bounded by its deadline. Messages are etcd's in the proto3
// JSON mapping: keys and values in base64, 64-bit numbers as decimal strings.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "etcd_transport.hpp"

namespace sqlock::etcd::detail {

/// Base64 of `bytes` (standard alphabet, padded).
std::string b64(std::string_view bytes);
/// Bytes of base64 `text`; backend_error when it is malformed.
std::string unb64(std::string_view text);
/// The first key after every key that starts with `p` (etcd's "prefix end").
std::string prefix_end(std::string p);
/// A 64-bit number the gateway sent as a decimal string (or an integer); 0 when absent;
/// backend_error for anything else.
std::int64_t num(const json& j, const char* key);

class gateway {
 public:
  explicit gateway(const options& o);
  ~gateway();
  gateway(const gateway&) = delete;
  gateway& operator=(const gateway&) = delete;

  /// Calls `path` ("kv/range", ...: transport) with `body` on a member, by `deadline`; the reply.
  /// Tries the next member when one does not answer or has no leader. Throws connection_error when
  /// no member answered in time, auth_error when authentication fails, etcd_error for etcd's
  /// refusals.
  json call(std::string_view path, const json& body, steady_time deadline);

  /// Starts the stream `path` ("watch") on the preferred member and returns at once (by
  /// `deadline`, which bounds getting the token): `on_message` gets every message from a reader
  /// thread until stop(), and `on_end` (if set) is called from that thread when the call ends
  /// by itself (the member closed it, the connection broke; not after stop()). The caller
  /// waits for its first message (stream::wait_started) for one member's attempt, and moves on
  /// with prefer_next_member() when none came.
  std::unique_ptr<stream> open_stream(std::string_view path, const json& body,
                                      std::function<void(const json&)> on_message,
                                      std::function<void()> on_end, steady_time deadline);
  /// The next call or stream goes first to the member after the preferred one (one member's
  /// attempt at a stream found it unavailable).
  void prefer_next_member();
  /// When one member's attempt ends: with several members, after the request timeout / 5 (not
  /// under a floor) so that the next one is tried in time; with one, at the deadline.
  steady_time member_attempt_end(steady_time deadline) const;

  /// The I/O bound of one request (URL `timeout=`).
  milliseconds timeout() const { return opts_.timeout; }

 private:
  std::string token(steady_time deadline, bool refresh);
  // The token to send now: "" without authentication.
  std::string current_token(steady_time deadline);

  options opts_;
  std::unique_ptr<transport> wire_;
  std::atomic<std::size_t> preferred_{0};  // the member that answered last
  std::mutex token_m_;
  std::string token_;  // "" = not authenticated yet (or no authentication)
};

}  // namespace sqlock::etcd::detail
