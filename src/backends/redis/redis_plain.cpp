// compat=plain (see redis_plain.hpp): the lock named N is the string key N itself, its value the
// holder's token, set with SET N token NX PX lease and given back with a compare-and-delete
// script, renewed with a compare-and-extend script: byte for byte what the peers do, so their
// locks and sqlock's exclude each other. Redlock takes the key on a majority of the masters
// within the lease less the drift allowance, as the peers' Redlock does. The layout has no room
// for a fence counter, a holder text, readers or permits; a waiter polls (the core's capped
// jittered backoff), as the peers publish nothing on release.
#include "redis_plain.hpp"

#include "redis_names.hpp"
#include "redis_servers.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/url.hpp"  // format_utc_ms

namespace sqlock::redis::detail {

namespace {

using clock = std::chrono::steady_clock;

// The text a SCAN MATCH pattern needs for `s` to match only itself.
std::string glob_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

// The string keys with a lease (a PTTL) on one server whose name starts with `prefix`: the
// locks of the layout (a key without a lease is no lock of any peer).
std::vector<lock_status> list_plain(node& nd, std::string_view prefix, const std::string& mode,
                                    steady_time deadline) {
  auto conn = nd.take(deadline);
  auto t = conn->command({"TIME"});
  reply_view tv{t.get()};
  if (tv.is_error()) throw_reply_error(*t, "Redis TIME");
  const long long now = std::stoll(tv.at(0).str()) * 1000 + std::stoll(tv.at(1).str()) / 1000;
  std::vector<lock_status> out;
  std::string cursor = "0";
  const std::string pattern = glob_escape(prefix) + "*";
  do {
    auto r = conn->command({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000", "TYPE", "string"});
    reply_view v{r.get()};
    if (v.is_error()) throw_reply_error(*r, "Redis SCAN");
    cursor = v.at(0).str();
    auto keys = v.at(1);
    const std::size_t n = keys.size("SCAN");
    for (std::size_t i = 0; i < n; ++i) {
      conn->append({"GET", keys.at(i).str()});
      conn->append({"PTTL", keys.at(i).str()});
    }
    if (n == 0) continue;
    conn->flush();
    for (std::size_t i = 0; i < n; ++i) {
      auto value = conn->read();
      auto pttl = conn->read();
      reply_view vv{value.get()}, pv{pttl.get()};
      if (vv.is_error() || pv.is_error()) continue;  // changed type meanwhile
      const long long ms = pv.integer("PTTL");
      if (ms <= 0) continue;  // no lease (no lock), or gone meanwhile
      lock_status held;
      held.name = keys.at(i).str();
      held.owner = vv.str();
      held.expires_at = format_utc_ms(now + ms);
      held.mode = mode;
      out.push_back(std::move(held));
    }
  } while (cursor != "0");
  nd.give(std::move(conn));
  return out;
}

class plain_store final : public backend, public store_admin, public hold_breaker {
 public:
  explicit plain_store(const options& o) : async_release_(o.async_release), srv_(o) {}

  std::optional<lease_info> try_acquire(const lock_request& req, steady_time deadline) override {
    check(req.name);
    if (req.kind != lock_kind::exclusive)
      throw unsupported("Redis compat=plain has exclusive locks only (the peers' layout)");
    if (req.lease.count() <= 0) throw config_error("lease must be > 0");
    const auto t0 = clock::now();
    auto res = srv_.round(lua::get("plain_acquire"), {req.name},
                          {req.owner, std::to_string(req.lease.count())}, deadline, req.name);
    const auto elapsed = clock::now() - t0;
    std::size_t granted = 0;
    const auto [answered, first_failure] = servers::tally(res, "acquire", [&](reply_view v) {
      if (v.size("acquire") < 2) throw backend_error("Redis acquire: unexpected reply");
      if (v.at(0).integer("acquire") == 1) ++granted;
    });
    if (!srv_.redlock()) {
      if (answered == 0) std::rethrow_exception(first_failure);
      if (granted == 0) return std::nullopt;
      return granted_hold(req);
    }
    if (srv_.confirmed(granted, elapsed, req.lease)) return granted_hold(req);
    if (granted > 0 || answered < srv_.size()) {
      // Undo everywhere, also where no reply came (the SET may have happened there), with a
      // short bound of its own: the round's deadline may have passed.
      try {
        srv_.round(lua::get("plain_release"), {req.name}, {req.owner},
                   std::max(deadline, clock::now() + milliseconds(250)));
      } catch (const std::exception&) {
        // The leases run out by themselves.
      }
    }
    if (answered < srv_.quorum()) throw srv_.quorum_error(answered, first_failure);
    return std::nullopt;
  }

  bool renew(const lease_info& l, milliseconds duration, steady_time deadline) override {
    check(l.name);
    if (duration.count() <= 0) throw config_error("lease must be > 0");
    const auto t0 = clock::now();
    auto res = srv_.round(lua::get("plain_extend"), {l.name},
                          {l.owner, std::to_string(duration.count())}, deadline);
    const auto elapsed = clock::now() - t0;
    const auto [answered, ok, first_failure] = servers::tally_ones(res, "renew");
    if (!srv_.redlock()) {
      if (answered == 0) std::rethrow_exception(first_failure);
      return ok == 1;
    }
    if (srv_.confirmed(ok, elapsed, duration)) return true;
    if (answered - ok > srv_.size() - srv_.quorum()) return false;  // no majority any more
    throw connection_error("Redlock renew: " + std::to_string(ok) + " of " +
                           std::to_string(srv_.size()) + " servers confirmed (need " +
                           std::to_string(srv_.quorum()) + "): " + describe_failure(first_failure));
  }

  bool release(const lease_info& l, steady_time deadline) override {
    check(l.name);
    // release=async: a hold this object granted is released without waiting for the reply
    // (redis_release.hpp); any other token waits, to say whether it held.
    if (async_release_ && holds_.take(l.owner)) {
      srv_.send_release(lua::get("plain_release"), {l.name}, {l.owner}, l.name, deadline);
      return true;
    }
    auto res = srv_.round(lua::get("plain_release"), {l.name}, {l.owner}, deadline);
    return servers::ones(res, "release") > 0;
  }

  std::vector<lock_status> list(std::string_view prefix) override {
    const std::string m = mode();
    return srv_.list(
        [&](node& n, steady_time deadline) { return list_plain(n, prefix, m, deadline); });
  }

  // No audit trail here: the actor (who forced it) is not kept.
  bool force_release(std::string_view name, std::string_view /*actor*/) override {
    check(name);
    auto res = srv_.round_raw({"DEL", std::string(name)}, srv_.admin_deadline());
    return servers::ones(res, "DEL") > 0;
  }

  void verify(steady_time deadline) override { srv_.ping(deadline); }
  store_admin* admin() noexcept override { return this; }
  hold_breaker* breaker() noexcept override { return this; }

  capabilities caps() const noexcept override {
    capabilities c;
    c.fencing = false;  // the key holds the token only: no counter a peer would raise
    c.fencing_safe = false;
    c.notify = false;  // the peers publish nothing on release: waiters poll
    c.fair = false;
    c.session_bound = false;
    c.holder_text = false;     // the value is the token alone
    c.listed_as_taken = true;  // the key is the name, its value the owner token
    c.cross_process = true;
    c.shared = false;
    c.permits = false;
    c.linger = true;
    return c;
  }

  std::string describe() const override {
    return srv_.describe() + " compat=plain" + (async_release_ ? " release=async" : "");
  }
  std::string kind() const override { return srv_.redlock() ? "redlock" : "redis"; }
  std::string mode() const override { return srv_.redlock() ? "redlock-plain" : "plain"; }

 private:
  static void check(std::string_view name) { check_lock_name(name); }
  lease_info granted_hold(const lock_request& req) {
    if (async_release_) holds_.add(req.owner);
    return lease_info{req.name, req.owner, 0, nullptr};
  }

  bool async_release_;
  own_holds holds_;  // release=async: the holds granted here and not yet released
  servers srv_;
};

}  // namespace

std::shared_ptr<backend> open_plain(const options& o) {
  return std::make_shared<plain_store>(o);
}

}  // namespace sqlock::redis::detail
