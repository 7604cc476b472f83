// Redis backend: one server (redis://) or Redlock over independent masters (redlock://).
// Every operation is sent to all servers of the store in one pipelined round (one server for
// redis://), so a Redlock attempt costs about one round trip, not N; the single-server mode is
// the same code with N = 1 and quorum 1.
#include <algorithm>
#include <cctype>
#include <map>

#include "redis_connection.hpp"
#include "redis_diagnostics.hpp"
#include "redis_list.hpp"
#include "redis_names.hpp"
#include "redis_wait.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/redis/redis.hpp"

namespace sqlock {
namespace redis {

namespace {

using namespace detail;
using clock = std::chrono::steady_clock;

const lua::script& script(std::string_view name) {
  return lua::get(name);
}

// How long a busy exclusive request keeps new shared holders out after its last attempt: longer
// than the pause between the attempts of a waiting acquire() (notify_recheck, 1 s by default),
// short enough that a writer which died while waiting holds up readers only briefly.
constexpr milliseconds writer_mark{3000};

// An error reply of the acquire script about the kind or number of permits of a name.
std::optional<std::string> mismatch(const reply_ptr& r) {
  reply_view v{r.get()};
  if (!r || !v.is_error()) return std::nullopt;
  std::string text(v.error_text());
  const std::string tag = "SQLOCK_MISMATCH ";
  auto at = text.find(tag);
  if (at == std::string::npos) return std::nullopt;
  return text.substr(at + tag.size());
}

// The outcome of one command on one server of a round.
struct node_result {
  reply_ptr reply;             // set when the server answered (possibly with an error reply)
  std::exception_ptr failure;  // set when it did not
  bool answered() const { return reply != nullptr; }
};

class store final : public backend {
 public:
  explicit store(const options& o) : redlock_(o.redlock), prefix_(o.prefix) {
    s_.user = o.user;
    s_.password = o.password;
    s_.db = o.db;
    const milliseconds dflt = o.redlock ? milliseconds(250) : milliseconds(2000);
    s_.connect_timeout = o.connect_timeout.count() > 0 ? o.connect_timeout : dflt;
    s_.timeout = o.timeout.count() > 0 ? o.timeout : dflt;
    s_.pool = std::max<std::size_t>(o.pool, 1);
    for (const auto& a : o.nodes) nodes_.push_back(std::make_unique<node>(a, s_));
    quorum_ = redlock_ ? nodes_.size() / 2 + 1 : 1;
    addrs_ = o.nodes;
    diagnostics_ = std::make_unique<redis_diagnostics>(addrs_, s_, redlock_);
  }

  ~store() override {
    std::unique_ptr<subscriber> s;
    {
      std::lock_guard g(sub_m_);
      s = std::move(sub_);
    }
  }

  std::unique_ptr<wait_state> open_wait(const lock_request& req) override {
    check_lock_name(req.name);
    // Interest in the lock's releases is registered before the first attempt is sent: a
    // release published after this point cannot go unnoticed by the wait that may follow.
    return std::make_unique<redis_wait>(ensure_subscriber().watch(encode_name(req.name)));
  }

  std::optional<lease_info> try_acquire(const lock_request& req, steady_time deadline,
                                        wait_state* ws) override {
    check_lock_name(req.name);
    if (req.lease.count() <= 0) throw config_error("lease must be > 0");
    auto* rw = static_cast<redis_wait*>(ws);  // made by open_wait() of this store
    if (rw) {
      rw->split = false;
      rw->expires_in = -1;
    }
    const auto keys = keys_of(req.name);
    const auto t0 = clock::now();
    auto res = round(script("acquire"), keys,
                     {req.owner, std::to_string(req.lease.count()), req.holder, to_string(req.kind),
                      std::to_string(req.permits), std::to_string(rw ? writer_mark.count() : 0)},
                     deadline);
    const auto elapsed = clock::now() - t0;
    for (const auto& r : res)
      if (auto why = mismatch(r.reply))
        throw config_error("Redis lock '" + req.name + "' is " + *why + ": every user of a name " +
                           "must ask for the same kind and number of permits");
    bool marked = false;
    std::size_t granted = 0;
    std::uint64_t fence = 0;
    std::vector<long long> ttls;  // of the servers where someone else holds it
    const auto [answered, first_failure] = tally(res, "acquire", [&](reply_view v) {
      if (v.size("acquire") < 2) throw backend_error("Redis acquire: unexpected reply");
      const long long second = v.at(1).integer("acquire");
      if (v.at(0).integer("acquire") == 1) {
        ++granted;
        fence = std::max<std::uint64_t>(fence, static_cast<std::uint64_t>(second));
      } else {
        if (second >= 0) ttls.push_back(second);
        if (v.size("acquire") > 2 && v.at(2).integer("acquire") == 1) marked = true;
      }
    });
    // A writer that marked itself waiting drops the mark when its acquire() call ends.
    if (rw && marked && !rw->on_end) {
      rw->on_end = [this, name = req.name, owner = req.owner] {
        round(script("unmark"), {meta_key(prefix_, name)}, {owner, channel_of(name)},
              clock::now() + milliseconds(250));
      };
    }
    // The other hold runs out (on enough servers) after this: no need to sleep past it.
    // (Smallest of the servers' remaining times: an early re-check is harmless.)
    if (rw && !ttls.empty()) {
      rw->expires_in = *std::min_element(ttls.begin(), ttls.end());
      rw->seen = t0;
    }
    if (rw && granted > 0) rw->on_end = nullptr;  // the acquire script dropped our mark
    if (!redlock_) {
      if (answered == 0) std::rethrow_exception(first_failure);
      if (granted == 0) return std::nullopt;
      return lease_info{req.name, req.owner, fence, nullptr};
    }
    // Redlock: a majority, and time left after the round trip and the clock drift allowance.
    const auto drift = req.lease / 100 + milliseconds(2);
    if (granted >= quorum_ && elapsed + drift < req.lease)
      return lease_info{req.name, req.owner, fence, nullptr};
    if (granted > 0 || answered < nodes_.size()) {
      // Undo everywhere, also where no reply came (the SET may have happened there).
      try {
        // The undo gets its own short bound: the round's deadline may already have passed.
        round(script("release"), keys, {req.owner, channel_of(req.name), std::to_string(fence)},
              std::max(deadline, clock::now() + milliseconds(250)));
      } catch (const std::exception&) {
        // The leases run out by themselves.
      }
    }
    if (answered < quorum_) throw quorum_error(answered, first_failure);
    if (rw) rw->split = granted > 0;
    return std::nullopt;
  }

  bool renew(const lease_info& l, milliseconds duration, steady_time deadline) override {
    check_lock_name(l.name);
    if (duration.count() <= 0) throw config_error("lease must be > 0");
    const auto t0 = clock::now();
    auto res =
        round(script("renew"),
              {owner_key(prefix_, l.name), info_key(prefix_, l.name), holders_key(prefix_, l.name),
               hinfo_key(prefix_, l.name), meta_key(prefix_, l.name)},
              {l.owner, std::to_string(duration.count())}, deadline);
    const auto elapsed = clock::now() - t0;
    std::size_t ok = 0, gone = 0;
    const auto [answered, first_failure] = tally(res, "renew", [&](reply_view v) {
      if (v.integer("renew") == 1)
        ++ok;
      else
        ++gone;
    });
    if (!redlock_) {
      if (answered == 0) std::rethrow_exception(first_failure);
      return ok == 1;
    }
    const auto drift = duration / 100 + milliseconds(2);
    if (ok >= quorum_ && elapsed + drift < duration) return true;
    if (gone > nodes_.size() - quorum_) return false;  // a majority can never be reached again
    throw connection_error("Redlock renew: " + std::to_string(ok) + " of " +
                           std::to_string(nodes_.size()) + " servers confirmed (need " +
                           std::to_string(quorum_) + "): " + describe_failure(first_failure));
  }

  bool release(const lease_info& l, steady_time deadline) override {
    check_lock_name(l.name);
    auto res =
        round(script("release"), keys_of(l.name),
              {l.owner, channel_of(l.name), redlock_ ? std::to_string(l.fence) : "0"}, deadline);
    const auto [answered, released, first_failure] = tally_ones(res, "release");
    if (released > 0) return true;
    if (answered == 0) std::rethrow_exception(first_failure);
    return false;
  }

  std::vector<lock_status> list(std::string_view prefix) override {
    // name -> owner -> merged row and how many servers have it
    std::map<std::string, std::map<std::string, std::pair<lock_status, std::size_t>>> seen;
    std::size_t reached = 0;
    std::exception_ptr first_failure;
    for (auto& n : nodes_) {
      try {
        auto rows =
            list_node(*n, prefix_, prefix, redlock_ ? "redlock" : "redis", admin_deadline());
        ++reached;
        for (auto& row : rows) {
          auto& [merged, count] = seen[row.name][row.owner];
          if (count == 0) {
            merged = row;
          } else {
            merged.fence = std::max(merged.fence, row.fence);
            merged.expires_at = std::min(merged.expires_at, row.expires_at);
          }
          ++count;
        }
      } catch (const std::exception&) {
        if (!first_failure) first_failure = std::current_exception();
      }
    }
    if (reached < quorum_) {
      if (!redlock_) std::rethrow_exception(first_failure);
      throw connection_error("Redlock list: only " + std::to_string(reached) + " of " +
                             std::to_string(nodes_.size()) + " servers answered");
    }
    std::vector<lock_status> out;
    for (auto& [name, owners] : seen)
      for (auto& [owner, mc] : owners)
        if (mc.second >= quorum_) out.push_back(std::move(mc.first));
    return out;
  }

  bool force_release(std::string_view name) override {
    check_lock_name(name);
    auto res = round(script("force_release"),
                     {owner_key(prefix_, name), info_key(prefix_, name), holders_key(prefix_, name),
                      hinfo_key(prefix_, name)},
                     {channel_of(name)}, admin_deadline());
    const auto [answered, released, first_failure] = tally_ones(res, "force_release");
    if (answered == 0) std::rethrow_exception(first_failure);
    return released > 0;
  }

  void verify(steady_time deadline) override {
    auto res = round_raw({"PING"}, exchange_bound(deadline, s_.timeout));
    const auto [ok, first_failure] = tally(res, "PING", [](reply_view) {});
    if (ok >= quorum_) return;
    if (!redlock_) std::rethrow_exception(first_failure);
    throw quorum_error(ok, first_failure);
  }

  capabilities caps() const noexcept override {
    capabilities c;
    c.fencing = true;
    c.fencing_safe = false;  // counters live in memory of asynchronously replicated servers
    c.notify = true;
    c.fair = false;
    c.session_bound = false;
    c.list = true;
    c.force_release = true;
    c.sweep = false;  // keys expire by themselves
    c.cross_process = true;
    // Redlock: a permit granted by a majority of servers that each admit N holders can be
    // granted to up to 5N/3 holders at once, so semaphores are refused there; shared locks
    // wait for a Redlock design of their own (the writer mark needs a majority too).
    c.shared = !redlock_;
    c.permits = !redlock_;
    return c;
  }

  std::string describe() const override {
    std::string d = redlock_ ? "redlock://" : "redis://";
    for (std::size_t i = 0; i < nodes_.size(); ++i) d += (i ? "," : "") + nodes_[i]->label();
    if (s_.db) d += "/" + std::to_string(s_.db);
    if (redlock_)
      d += " (" + std::to_string(nodes_.size()) + " masters, quorum " + std::to_string(quorum_) +
           ")";
    return d;
  }

  std::string kind() const override { return redlock_ ? "redlock" : "redis"; }
  store_diagnostics* diagnostics() noexcept override { return diagnostics_.get(); }
  std::string mode() const override { return redlock_ ? "redlock" : "single"; }

 private:
  // Bound of an administrative call (list, force_release, verify): the I/O timeout.
  steady_time admin_deadline() const { return clock::now() + s_.timeout; }

  std::vector<std::string> keys_of(std::string_view name) const {
    return {owner_key(prefix_, name),   fence_key(prefix_, name), info_key(prefix_, name),
            holders_key(prefix_, name), hinfo_key(prefix_, name), meta_key(prefix_, name)};
  }
  std::string channel_of(std::string_view name) const { return release_channel(prefix_, name); }

  static std::exception_ptr capture_reply_error(const redisReply& r, const std::string& what) {
    try {
      throw_reply_error(r, "Redis " + what);
    } catch (...) {
      return std::current_exception();
    }
  }
  static std::string describe_failure(const std::exception_ptr& p) {
    if (!p) return "no error";
    try {
      std::rethrow_exception(p);
    } catch (const std::exception& e) {
      return e.what();
    } catch (...) {
      return "unknown error";
    }
  }

  // What the servers of a round answered.
  struct replies_tally {
    std::size_t answered = 0;          // servers that replied without an error reply
    std::exception_ptr first_failure;  // the first transport failure or error reply
  };
  // Walks a round's results: failures and error replies are remembered (the first one), every
  // other reply is handed to `on_reply`, in server order.
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
        if (!t.first_failure) t.first_failure = capture_reply_error(*r.reply, what);
        continue;
      }
      ++t.answered;
      on_reply(v);
    }
    return t;
  }
  // tally() of a script that answers 1 (done) or 0: also how many servers said 1.
  struct ones_tally {
    std::size_t answered = 0;
    std::size_t ones = 0;
    std::exception_ptr first_failure;
  };
  static ones_tally tally_ones(const std::vector<node_result>& res, const std::string& what) {
    std::size_t ones = 0;
    auto t = tally(res, what, [&](reply_view v) {
      if (v.integer(what) == 1) ++ones;
    });
    return {t.answered, ones, t.first_failure};
  }
  // Redlock: fewer than a majority of the servers answered.
  connection_error quorum_error(std::size_t answered,
                                const std::exception_ptr& first_failure) const {
    return connection_error("Redlock: only " + std::to_string(answered) + " of " +
                            std::to_string(nodes_.size()) + " servers answered (need " +
                            std::to_string(quorum_) + "): " + describe_failure(first_failure));
  }

  subscriber& ensure_subscriber() {
    std::lock_guard g(sub_m_);
    if (!sub_)
      sub_ = std::make_unique<subscriber>(addrs_, s_, prefix_ + ":{", std::string("}:released"));
    return *sub_;
  }

  // One command on every server: all requests are written first, then all replies are read,
  // so the round costs the slowest server's round trip. A server whose pooled connection turned
  // out stale (restart, CLIENT KILL) is asked once more on a fresh connection.
  // Every exchange of the round returns by exchange_bound(deadline, timeout): a server that
  // does not answer by then fails its part with connection_error and its connection is dropped.
  std::vector<node_result> round_argv(const std::vector<std::string>& sha_argv,
                                      const lua::script* s, steady_time deadline) {
    const std::size_t n = nodes_.size();
    std::vector<node_result> res(n);
    std::vector<bool> pending(n, true);
    for (int pass = 0; pass < 2; ++pass) {
      std::vector<std::unique_ptr<connection>> conns(n);
      for (std::size_t i = 0; i < n; ++i) {
        if (!pending[i]) continue;
        pending[i] = false;
        try {
          conns[i] = nodes_[i]->take(deadline);
          conns[i]->append(sha_argv);
          conns[i]->flush();
        } catch (const error&) {
          res[i].failure = std::current_exception();
          if (conns[i] && conns[i]->reused && pass == 0) {
            nodes_[i]->drop_idle();
            pending[i] = true;
          }
          conns[i].reset();
        }
      }
      for (std::size_t i = 0; i < n; ++i) {
        if (!conns[i]) continue;
        try {
          auto r = conns[i]->read();
          if (s && is_noscript(r.get())) {  // script cache flushed or server restarted
            auto full = sha_argv;
            full[0] = "EVAL";
            full[1] = std::string(s->text);
            r = conns[i]->command(full);
          }
          res[i].reply = std::move(r);
          res[i].failure = nullptr;
          nodes_[i]->give(std::move(conns[i]));
        } catch (const error&) {
          res[i].failure = std::current_exception();
          if (conns[i]->reused && pass == 0) {
            nodes_[i]->drop_idle();
            pending[i] = true;
          }
          conns[i].reset();
        }
      }
      if (std::none_of(pending.begin(), pending.end(), [](bool b) { return b; })) break;
    }
    return res;
  }

  std::vector<node_result> round(const lua::script& s, const std::vector<std::string>& keys,
                                 const std::vector<std::string>& args, steady_time deadline) {
    return round_argv(script_argv(s, false, keys, args), &s, deadline);
  }
  std::vector<node_result> round_raw(const std::vector<std::string>& argv, steady_time deadline) {
    return round_argv(argv, nullptr, deadline);
  }

  bool redlock_;
  std::string prefix_;
  settings s_;
  std::vector<node_address> addrs_;
  std::vector<std::unique_ptr<node>> nodes_;
  std::size_t quorum_ = 1;
  std::mutex sub_m_;
  std::unique_ptr<subscriber> sub_;
  std::unique_ptr<redis_diagnostics> diagnostics_;
};

void check_options(const options& o) {
  if (o.nodes.empty()) throw config_error("Redis: no server given");
  for (const auto& n : o.nodes) {
    if (n.host.empty()) throw config_error("Redis: empty host name");
    if (n.port <= 0 || n.port > 65535)
      throw config_error("Redis: bad port " + std::to_string(n.port));
  }
  if (!o.redlock && o.nodes.size() != 1)
    throw config_error("redis:// takes one server; use redlock://h1:p1,h2:p2,h3:p3 for several");
  if (o.prefix.empty()) throw config_error("Redis key prefix must not be empty");
  for (char c : o.prefix)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == ':' ||
          c == '/' || c == '-'))
      throw config_error("Redis key prefix may only contain letters, digits and _.:/- (got '" +
                         o.prefix + "')");
  if (o.db < 0) throw config_error("Redis database number must be >= 0");
  if (o.connect_timeout.count() < 0 || o.timeout.count() < 0)
    throw config_error("Redis timeouts must be >= 0");
}

}  // namespace

std::shared_ptr<backend> open(const options& opts) {
  check_options(opts);
  return std::make_shared<store>(opts);
}

}  // namespace redis

}  // namespace sqlock
