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
#include "redis_plain.hpp"
#include "redis_servers.hpp"
#include "redis_subscriber.hpp"
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

class redis_backend final : public backend, public store_admin, public hold_breaker {
 public:
  explicit redis_backend(const options& o)
      : redlock_(o.redlock), async_release_(o.async_release), prefix_(o.prefix), srv_(o) {
    diagnostics_ =
        std::make_unique<redis_diagnostics>(srv_.addresses(), srv_.conn_settings(), srv_.redlock());
  }

  ~redis_backend() override {
    std::unique_ptr<subscriber> s;
    {
      std::lock_guard g(sub_m_);
      s = std::move(sub_);
    }
  }

  std::unique_ptr<acquisition> make_acquisition(const lock_request& req,
                                                const wait_policy& policy) override;

  std::optional<lease_info> try_acquire(const lock_request& req, steady_time deadline) override {
    return attempt(req, deadline, nullptr);
  }

  // One attempt; `rw` is what the waiting request it belongs to keeps (null: a single try).
  std::optional<lease_info> attempt(const lock_request& req, steady_time deadline, redis_wait* rw) {
    check_lock_name(req.name);
    if (req.lease.count() <= 0) throw config_error("lease must be > 0");
    if (rw) {
      rw->split = false;
      rw->expires_in = -1;
    }
    const auto keys = keys_of(req.name);
    const auto t0 = clock::now();
    auto res =
        srv_.round(script("acquire"), keys,
                   {req.owner, std::to_string(req.lease.count()), req.holder, to_string(req.kind),
                    std::to_string(req.permits), std::to_string(rw ? writer_mark.count() : 0)},
                   deadline, req.name);
    const auto elapsed = clock::now() - t0;
    for (const auto& r : res)
      if (auto why = mismatch(r.reply))
        throw config_error("Redis lock '" + req.name + "' is " + *why + ": every user of a name " +
                           "must ask for the same kind and number of permits");
    bool marked = false;
    std::size_t granted = 0;
    std::uint64_t fence = 0;
    std::vector<long long> ttls;  // of the servers where someone else holds it
    const auto [answered, first_failure] = servers::tally(res, "acquire", [&](reply_view v) {
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
        srv_.round(script("unmark"), {meta_key(prefix_, name)}, {owner, channel_of(name)},
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
      return granted_hold(req, fence);
    }
    if (srv_.confirmed(granted, elapsed, req.lease)) return granted_hold(req, fence);
    if (granted > 0 || answered < srv_.size()) {
      // Undo everywhere, also where no reply came (the SET may have happened there).
      try {
        // The undo gets its own short bound: the round's deadline may already have passed.
        srv_.round(script("release"), keys,
                   {req.owner, channel_of(req.name), std::to_string(fence)},
                   std::max(deadline, clock::now() + milliseconds(250)));
      } catch (const std::exception&) {
        // The leases run out by themselves.
      }
    }
    if (answered < srv_.quorum()) throw srv_.quorum_error(answered, first_failure);
    if (rw) rw->split = granted > 0;
    return std::nullopt;
  }

  bool renew(const lease_info& l, milliseconds duration, steady_time deadline) override {
    check_lock_name(l.name);
    if (duration.count() <= 0) throw config_error("lease must be > 0");
    const auto t0 = clock::now();
    auto res = srv_.round(
        script("renew"),
        {owner_key(prefix_, l.name), info_key(prefix_, l.name), holders_key(prefix_, l.name),
         hinfo_key(prefix_, l.name), meta_key(prefix_, l.name)},
        {l.owner, std::to_string(duration.count())}, deadline);
    const auto elapsed = clock::now() - t0;
    std::size_t ok = 0, gone = 0;
    const auto [answered, first_failure] = servers::tally(res, "renew", [&](reply_view v) {
      if (v.integer("renew") == 1)
        ++ok;
      else
        ++gone;
    });
    if (!redlock_) {
      if (answered == 0) std::rethrow_exception(first_failure);
      return ok == 1;
    }
    if (srv_.confirmed(ok, elapsed, duration)) return true;
    if (gone > srv_.size() - srv_.quorum()) return false;  // a majority can never be reached again
    throw connection_error("Redlock renew: " + std::to_string(ok) + " of " +
                           std::to_string(srv_.size()) + " servers confirmed (need " +
                           std::to_string(srv_.quorum()) + "): " + describe_failure(first_failure));
  }

  bool release(const lease_info& l, steady_time deadline) override {
    check_lock_name(l.name);
    const std::vector<std::string> args = {l.owner, channel_of(l.name),
                                           redlock_ ? std::to_string(l.fence) : "0"};
    // release=async: a hold this object granted is released without waiting for the reply
    // (redis_release.hpp); any other token waits, to say whether it held.
    if (async_release_ && holds_.take(l.owner)) {
      srv_.send_release(script("release"), keys_of(l.name), args, l.name, deadline);
      return true;
    }
    auto res = srv_.round(script("release"), keys_of(l.name), args, deadline);
    return servers::ones(res, "release") > 0;
  }

  std::vector<lock_status> list(std::string_view prefix) override {
    return srv_.list([&](node& n, steady_time deadline) {
      return list_node(n, prefix_, prefix, redlock_ ? "redlock" : "redis", deadline);
    });
  }

  // No audit trail here: the actor (who forced it) is not kept.
  bool force_release(std::string_view name, std::string_view /*actor*/) override {
    check_lock_name(name);
    auto res = srv_.round(script("force_release"),
                          {owner_key(prefix_, name), info_key(prefix_, name),
                           holders_key(prefix_, name), hinfo_key(prefix_, name)},
                          {channel_of(name)}, srv_.admin_deadline());
    return servers::ones(res, "force_release") > 0;
  }

  void verify(steady_time deadline) override { srv_.ping(deadline); }
  store_admin* admin() noexcept override { return this; }
  hold_breaker* breaker() noexcept override { return this; }

  capabilities caps() const noexcept override {
    capabilities c;
    c.holder_text = true;
    c.listed_as_taken = true;
    c.linger = true;
    c.fencing = true;
    c.fencing_safe = false;  // counters live in memory of asynchronously replicated servers
    c.notify = true;
    c.fair = false;
    c.session_bound = false;
    c.cross_process = true;
    // Redlock: a permit granted by a majority of servers that each admit N holders can be
    // granted to up to 5N/3 holders at once, so semaphores are refused there; shared locks
    // wait for a Redlock design of their own (the writer mark needs a majority too).
    c.shared = !redlock_;
    c.permits = !redlock_;
    return c;
  }

  std::string describe() const override {
    return srv_.describe() + (async_release_ ? " release=async" : "");
  }

  std::string kind() const override { return redlock_ ? "redlock" : "redis"; }
  store_diagnostics* diagnostics() noexcept override { return diagnostics_.get(); }
  std::string mode() const override { return redlock_ ? "redlock" : "single"; }

 private:
  lease_info granted_hold(const lock_request& req, std::uint64_t fence) {
    if (async_release_) holds_.add(req.owner);
    return lease_info{req.name, req.owner, fence, nullptr};
  }
  std::vector<std::string> keys_of(std::string_view name) const {
    return {owner_key(prefix_, name),   fence_key(prefix_, name), info_key(prefix_, name),
            holders_key(prefix_, name), hinfo_key(prefix_, name), meta_key(prefix_, name)};
  }
  std::string channel_of(std::string_view name) const { return release_channel(prefix_, name); }

  subscriber& ensure_subscriber() {
    std::lock_guard g(sub_m_);
    if (!sub_)
      sub_ = std::make_unique<subscriber>(srv_.addresses(), srv_.conn_settings(), prefix_ + ":{",
                                          std::string("}:released"));
    return *sub_;
  }

  bool redlock_;
  bool async_release_;
  own_holds holds_;  // release=async: the holds granted here and not yet released
  std::string prefix_;
  servers srv_;
  std::mutex sub_m_;
  std::unique_ptr<subscriber> sub_;
  std::unique_ptr<redis_diagnostics> diagnostics_;
};

// One waiting request: the interest in its lock's releases, registered before the first
// attempt is sent (a release published after it cannot go unnoticed by the wait that may
// follow), and what its attempts saw and left (redis_wait).
class redis_acquisition final : public acquisition {
 public:
  redis_acquisition(redis_backend& s, lock_request req, std::unique_ptr<interest> watching)
      : backend_(s), req_(std::move(req)), state_(std::move(watching)) {}
  std::optional<lease_info> attempt(steady_time deadline) override {
    state_.attempt_starts();
    return backend_.attempt(req_, deadline, &state_);
  }
  void wait(steady_time until, const std::stop_token& stop) override { state_.wait(until, stop); }
  std::optional<steady_time> arm(steady_time until, waker wake) override {
    return state_.arm(until, std::move(wake));
  }
  void disarm() noexcept override { state_.disarm(); }
  void cancel() noexcept override { state_.end(); }

 private:
  redis_backend& backend_;
  lock_request req_;
  redis_wait state_;
};

std::unique_ptr<acquisition> redis_backend::make_acquisition(const lock_request& req,
                                                             const wait_policy&) {
  check_lock_name(req.name);
  return std::make_unique<redis_acquisition>(*this, req,
                                             ensure_subscriber().watch(encode_name(req.name)));
}

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
  if (opts.compat == "plain") return open_plain(opts);
  if (!opts.compat.empty())
    throw config_error("Redis compat='" + opts.compat + "' is not a layout (valid: plain)");
  return std::make_shared<redis_backend>(opts);
}

}  // namespace redis

}  // namespace sqlock
