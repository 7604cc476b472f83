// The servers of one Redis store (one for redis://, the Redlock masters for redlock://) and the
// one way the backend talks to them: a command sent to every server in one pipelined round, and
// the tally of what the servers answered. Shared by sqlock's own layout (redis_backend.cpp) and
// the peers' layout (redis_plain.cpp). Internal.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "redis_connection.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/redis/redis.hpp"

namespace sqlock::redis::detail {

/// The outcome of one command on one server of a round.
struct node_result {
  reply_ptr reply;             ///< set when the server answered (possibly with an error reply)
  std::exception_ptr failure;  ///< set when it did not
  /// True when the server answered.
  bool answered() const { return reply != nullptr; }
};

/// What the servers of a round answered.
struct replies_tally {
  std::size_t answered = 0;          ///< servers that replied without an error reply
  std::exception_ptr first_failure;  ///< the first transport failure or error reply
};

/// replies_tally of a script that answers 1 (done) or 0, with how many servers said 1.
struct ones_tally {
  std::size_t answered = 0;          ///< servers that replied without an error reply
  std::size_t ones = 0;              ///< servers that answered 1
  std::exception_ptr first_failure;  ///< the first transport failure or error reply
};

/// The text of a failure ("no error" for none).
std::string describe_failure(const std::exception_ptr& p);

/// The servers of a store, with their pools; quorum 1 for redis://, N/2+1 for Redlock.
class servers {
 public:
  /// Servers for `o` (already checked).
  explicit servers(const options& o);
  servers(const servers&) = delete;
  servers& operator=(const servers&) = delete;

  /// One script call on every server: all requests are written first, then all replies read,
  /// so the round costs the slowest server's round trip. A server whose pooled connection turned
  /// out stale (restart, CLIENT KILL) is asked once more on a fresh connection. Every exchange
  /// returns by exchange_bound(deadline, timeout): a server that does not answer by then fails
  /// its part with connection_error and its connection is dropped.
  /// With `lock` given (an acquire of it), the round does not overtake the same client's
  /// release of that lock sent without waiting (node::take).
  std::vector<node_result> round(const lua::script& s, const std::vector<std::string>& keys,
                                 const std::vector<std::string>& args, steady_time deadline,
                                 std::string_view lock = {});
  /// A release (release=async): the script call of `lock` written to every server without
  /// waiting for the replies, which the connection's next use or the background flush reads.
  /// A server it cannot be written to gets it from the flush's retries. Never throws
  /// connection_error.
  void send_release(const lua::script& s, const std::vector<std::string>& keys,
                    const std::vector<std::string>& args, const std::string& lock,
                    steady_time deadline);
  /// One plain command on every server, as round().
  std::vector<node_result> round_raw(const std::vector<std::string>& argv, steady_time deadline);

  /// Walks a round's results: failures and error replies are remembered (the first one), every
  /// other reply is handed to `on_reply`, in server order.
  template <class OnReply>
  static replies_tally tally(const std::vector<node_result>& res, const std::string& what,
                             OnReply&& on_reply) {
    replies_tally t;
    for (const auto& r : res) {
      if (!r.answered()) {
        if (!t.first_failure) t.first_failure = r.failure;
        continue;
      }
      reply_view v{r.reply.get()};
      if (v.is_error()) {
        if (!t.first_failure) t.first_failure = reply_failure(*r.reply, what);
        continue;
      }
      ++t.answered;
      on_reply(v);
    }
    return t;
  }
  /// tally() of a script that answers 1 or 0.
  static ones_tally tally_ones(const std::vector<node_result>& res, const std::string& what);
  /// How many servers answered 1 (release, force_release); the first failure is thrown when no
  /// server answered at all.
  static std::size_t ones(const std::vector<node_result>& res, const std::string& what);

  /// Redlock: fewer than a majority of the servers answered.
  connection_error quorum_error(std::size_t answered,
                                const std::exception_ptr& first_failure) const;
  /// The holds every server lists (`on_node` lists one server by a deadline), merged: a hold
  /// counts when a quorum of servers lists it (its fence the highest, its expiry the earliest
  /// seen). Throws when fewer than a quorum of servers answered.
  std::vector<lock_status> list(
      const std::function<std::vector<lock_status>(node&, steady_time)>& on_node);
  /// PING on every server: returns when a quorum answered, else throws the first failure.
  void ping(steady_time deadline);

  /// Redlock: whether `ok` servers that confirmed a lease of `lease` within `elapsed` make a
  /// valid hold (a majority, and time left after the clock drift allowance of the lease:
  /// 1 % + 2 ms, the factor of the Redlock description).
  bool confirmed(std::size_t ok, std::chrono::steady_clock::duration elapsed,
                 milliseconds lease) const {
    return ok >= quorum_ && elapsed + lease / 100 + milliseconds(2) < lease;
  }
  /// Number of servers.
  std::size_t size() const { return nodes_.size(); }
  /// Servers that must agree (1, or a majority for Redlock).
  std::size_t quorum() const { return quorum_; }
  /// True for Redlock.
  bool redlock() const { return redlock_; }
  /// Server `i`.
  node& at(std::size_t i) { return *nodes_[i]; }
  /// The settings every connection uses.
  const settings& conn_settings() const { return s_; }
  /// The addresses of the servers.
  const std::vector<node_address>& addresses() const { return addrs_; }
  /// "redis://h:p/db" or "redlock://h1:p1,h2:p2/db (N masters, quorum Q)".
  std::string describe() const;
  /// Bound of an administrative call (list, force_release, verify): the I/O timeout from now.
  steady_time admin_deadline() const;

 private:
  static std::exception_ptr reply_failure(const redisReply& r, const std::string& what);
  std::vector<node_result> round_argv(const std::vector<std::string>& sha_argv,
                                      const lua::script* s, steady_time deadline,
                                      std::string_view lock);
  bool flush_step(steady_time now);
  void retry(node& n, owed_release o);

  bool redlock_;
  settings s_;
  std::vector<node_address> addrs_;
  std::vector<std::unique_ptr<node>> nodes_;
  std::size_t quorum_ = 1;
  release_flusher flusher_{[this](steady_time now) { return flush_step(now); }};  // after nodes_
};

}  // namespace sqlock::redis::detail
