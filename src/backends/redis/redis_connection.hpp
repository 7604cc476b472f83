// Connections of the Redis backend: one hiredis context wrapped with timeouts and error mapping
// (the one place where hiredis failures become sqlock errors), a per-server pool with reconnect
// backoff (hiredis contexts are not thread-safe, so each call borrows its own), and script calls
// with EVALSHA and reload on NOSCRIPT. The pub/sub listener that wakes waiters is
// redis_subscriber.hpp.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "redis_lua.hpp"
#include "redis_release.hpp"
#include "sqlock/backend.hpp"
#include "sqlock/redis/redis.hpp"

struct redisContext;
struct redisReply;

namespace sqlock::redis::detail {

/// Frees a hiredis reply.
struct reply_deleter {
  /// Calls freeReplyObject.
  void operator()(redisReply* r) const noexcept;
};
/// An owned hiredis reply.
using reply_ptr = std::unique_ptr<redisReply, reply_deleter>;

/// What every connection of a store needs.
struct settings {
  std::string user;                ///< ACL user ("" = password only)
  std::string password;            ///< "" = no AUTH
  int db = 0;                      ///< SELECT this database when not 0
  milliseconds connect_timeout{};  ///< TCP connect timeout
  milliseconds timeout{};          ///< reply timeout
  std::size_t pool = 8;            ///< idle connections kept per server
};

/// Throws the sqlock error for an error reply (the one mapping of server errors).
[[noreturn]] void throw_reply_error(const redisReply& r, const std::string& where);

/// A redisReply accessor set that throws backend_error on unexpected shapes.
struct reply_view {
  const redisReply* r;  ///< the reply (not owned)
  /// True for an error reply.
  bool is_error() const;
  /// Error text (empty when not an error).
  std::string_view error_text() const;
  /// Integer value (integer replies, or strings holding an integer).
  long long integer(const std::string& what) const;
  /// String value (bulk/status/integer as text); "" for nil.
  std::string str() const;
  /// Element count of an array reply (throws for other types).
  std::size_t size(const std::string& what) const;
  /// Element `i` of an array reply.
  reply_view at(std::size_t i) const;
};

/// One hiredis connection, authenticated and on the right database.
class connection {
 public:
  /// Connects (connect_timeout, cut to `until`), bounds every exchange by `until`, AUTH and
  /// SELECT. Throws connection_error (unreachable, timed out) or auth_error (refused).
  connection(const node_address& addr, const settings& s, steady_time until);
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  /// Sends one command and waits for its reply; error replies are returned, not thrown.
  /// Throws connection_error when the connection fails (it is then broken()).
  reply_ptr command(const std::vector<std::string>& argv);
  /// Queues one command in the output buffer (pipelining); call flush() then read().
  void append(const std::vector<std::string>& argv);
  /// Writes the output buffer to the socket.
  void flush();
  /// Reads the next reply of the pipeline (after the replies owed to async releases).
  reply_ptr read();
  /// Reads the replies owed to releases sent without waiting (release=async), handing each to
  /// the book; on a failure the rest go to the book's retries and connection_error is thrown.
  void settle();
  /// Records a release just appended and flushed whose reply is left for later; `book` (which
  /// must outlive the connection) learns what comes of it.
  void owe(owed_release o, release_book& book);
  /// True when a release of `lock` is owed a reply on this connection.
  bool owes(std::string_view lock) const;
  /// When the oldest owed release was sent (steady_time::max() when none is owed).
  steady_time oldest_owed() const;
  /// Calls `s` with EVALSHA and, on NOSCRIPT, again with EVAL (which also caches it).
  reply_ptr eval(const lua::script& s, const std::vector<std::string>& keys,
                 const std::vector<std::string>& args);
  /// Bounds every following exchange (until the next bound()) by `until` (µs precision; at
  /// least 1 ms). A timed-out exchange breaks the connection: it is never reused.
  void bound(steady_time until);
  /// True once an I/O error or timeout happened: the connection must not be reused.
  bool broken() const { return broken_; }
  /// True when the connection came from the idle pool (it may be stale).
  bool reused = false;
  /// Hands the raw context over to the caller (the subscriber polls its socket); the
  /// connection object is left empty.
  redisContext* release_context() {
    auto* c = c_;
    c_ = nullptr;
    broken_ = true;
    return c;
  }

 private:
  [[noreturn]] void fail(const char* what);
  redisContext* c_ = nullptr;
  std::vector<owed_release> owed_;  // replies owed, in the order sent
  release_book* book_ = nullptr;
  std::string label_;
  bool broken_ = false;
};

/// Builds the EVALSHA (full=false) or EVAL (full=true) argument vector of a script call.
std::vector<std::string> script_argv(const lua::script& s, bool full,
                                     const std::vector<std::string>& keys,
                                     const std::vector<std::string>& args);

/// True when an error reply is NOSCRIPT.
bool is_noscript(const redisReply* r);

/// The next reconnect backoff after `previous` (0 at first): 25 ms, doubling up to 1 s.
milliseconds reconnect_backoff(milliseconds previous);

/// One Redis server: a pool of idle connections and the reconnect backoff.
class node {
 public:
  /// A server at `addr`; `s` must outlive the node.
  node(node_address addr, const settings& s) : addr_(std::move(addr)), s_(s) {}
  /// An idle connection, or a new one, its exchanges bounded by exchange_bound(deadline,
  /// timeout). During reconnect backoff (after a failed connect) fails fast with
  /// connection_error. With `lock` given, the call must not overtake a release of it sent
  /// without waiting: the connection that carries it when it is idle (the server answers one
  /// connection in order), else after waiting for its reply, at most until `deadline`.
  std::unique_ptr<connection> take(steady_time deadline, std::string_view lock = {});
  /// Returns a connection to the pool (dropped when broken or the pool is full).
  void give(std::unique_ptr<connection> c) noexcept;
  /// The async releases of this server.
  release_book& book() { return book_; }
  /// Reads the owed replies of connections idle since before `cutoff` (the background flush).
  void collect(steady_time cutoff) noexcept;
  /// Drops every idle connection (after one turned out stale: the others likely are too).
  void drop_idle() noexcept;
  /// "host:port".
  std::string label() const;
  /// The address.
  const node_address& address() const { return addr_; }

 private:
  std::unique_ptr<connection> take_owing(std::string_view lock);

  node_address addr_;
  const settings& s_;
  release_book book_;  // before idle_: a dropped connection hands its owed replies to it
  std::mutex m_;
  std::vector<std::unique_ptr<connection>> idle_;
  steady_time retry_at_{};
  milliseconds backoff_{0};
};

}  // namespace sqlock::redis::detail
