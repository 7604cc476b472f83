// Connections of the Redis backend: one hiredis context wrapped with timeouts and error mapping
// (the one place where hiredis failures become sqlock errors), a per-server pool with reconnect
// backoff (hiredis contexts are not thread-safe, so each call borrows its own), script calls
// with EVALSHA and reload on NOSCRIPT, and the pub/sub listener that wakes waiters.
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

/// Waiters of one store, shared by the listener thread and the interest registrations (which
/// may outlive the store: a wait state can be destroyed after it).
struct wait_registry {
  /// The waiters of one lock (by encoded name).
  struct waiter {
    std::condition_variable_any cv;  ///< notified when gen changes
    std::uint64_t gen = 0;           ///< bumped by every release message of this lock
    int count = 0;                   ///< registrations holding this entry
    /// Armed asynchronous waits (interest::arm), called once at the next bump of `gen`.
    std::map<const void*, std::function<void()>> wakers;
  };
  std::mutex m;                          ///< guards everything below
  std::condition_variable_any ready_cv;  ///< notified when `ready` or `stop` change
  int ready = 0;                         ///< servers whose subscription stands
  bool stop = false;                     ///< the listener is shutting down
  std::unordered_map<std::string, std::shared_ptr<waiter>> waiters;  ///< by encoded name
};

/// Interest in the releases of one lock, taken before an attempt is sent: a release published
/// after that moment bumps the generation it remembers, so no notification can slip between a
/// busy attempt and the wait that follows it.
class interest {
 public:
  /// Registers interest in encoded name `key`.
  interest(std::shared_ptr<wait_registry> reg, std::string key);
  /// Unregisters.
  ~interest();
  interest(const interest&) = delete;
  interest& operator=(const interest&) = delete;
  /// Waits until a release of the lock arrived since registration, a resubscription happened,
  /// `until` or `stop`. When no subscription stood at registration, returns as soon as one does.
  void wait(steady_time until, const std::stop_token& stop);
  /// Called at the start of every attempt: arm() looks for releases from then on.
  void attempt_starts();
  /// What arm() found.
  enum class armed { wake_armed, heard, cannot };
  /// The non-blocking form of wait() (acquisition::arm): `heard` when a release (or a
  /// resubscription) arrived since the last attempt started; `cannot` while no subscription
  /// stands (the caller backs off); else keeps `wake`, called once at the next release.
  armed arm(std::function<void()> wake);
  /// Drops the wake-up of arm().
  void disarm() noexcept;
  /// The registry this interest belongs to.
  const wait_registry* registry() const { return reg_.get(); }
  /// The encoded name.
  const std::string& key() const { return key_; }

 private:
  std::shared_ptr<wait_registry> reg_;
  std::string key_;
  std::shared_ptr<wait_registry::waiter> w_;
  std::uint64_t gen_ = 0;
  std::uint64_t seen_ = 0;  // gen when the last attempt started (arm())
  bool was_ready_ = false;
};

/// The pub/sub listener of one store: one thread, one subscriber connection per server
/// (PSUBSCRIBE on the release channels of the key prefix), reconnecting with backoff. A message
/// wakes the waiters of its lock; a (re)subscription wakes every waiter (releases during the
/// outage went unheard).
class subscriber {
 public:
  /// Starts the thread. `channel_head`/`channel_tail` frame the encoded name in a channel.
  subscriber(std::vector<node_address> nodes, const settings& s, std::string channel_head,
             std::string channel_tail);
  /// Stops and joins the thread.
  ~subscriber();
  subscriber(const subscriber&) = delete;
  subscriber& operator=(const subscriber&) = delete;

  /// Registers interest in the releases of encoded name `key` (before sending an attempt).
  std::unique_ptr<interest> watch(const std::string& key) {
    return std::make_unique<interest>(reg_, key);
  }
  /// The registry of waiters.
  const wait_registry* registry() const { return reg_.get(); }

 private:
  struct link {
    node_address addr;
    redisContext* c = nullptr;
    steady_time retry_at{};
    milliseconds backoff{0};
  };
  void run();
  bool subscribe(link& l);
  void drop(link& l);
  void on_message(std::string_view channel);
  void bump_all();

  std::vector<link> links_;
  const settings& s_;
  std::string head_, tail_;
  std::shared_ptr<wait_registry> reg_ = std::make_shared<wait_registry>();
  int wake_[2] = {-1, -1};
  std::thread thread_;
};

}  // namespace sqlock::redis::detail
