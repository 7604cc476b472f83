// The skeleton backend: the file to copy for a new backend (docs/backend-authors.md walks through
// it). Its "store" is a map in this process behind a fake round trip (the URL's latency=), so it
// shows everything a real backend does — one attempt per call bounded by the caller's deadline,
// leases on the store's clock, owner-checked renew and release, fences from one counter, an
// admin that lists and force-releases — with nothing to install. Waiting is the core's default
// (polling_acquisition): a store that can tell about releases returns its own acquisition.
//   example:NAME[?latency=1ms]   NAME: one store per name within the process
#include <map>
#include <mutex>
#include <thread>

#include "sqlock/backend.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/url.hpp"

namespace sqlock {
namespace example {
namespace {

using clock = std::chrono::steady_clock;

// 1. The store. A real backend talks to a server here; this one keeps the holds of each name.
struct record {
  std::string owner;
  std::uint64_t fence = 0;
  clock::time_point expires;  // the store's clock (a server's own, never the client's wall clock)
  std::string holder;
};

struct store {
  std::mutex m;
  std::map<std::string, record> holds;
  std::uint64_t fences = 0;  // one counter per store: fences of every name rise in one order

  // One round trip: a real exchange would send and wait for the answer, never past `deadline`.
  void round_trip(milliseconds latency, steady_time deadline) {
    if (clock::now() + latency > deadline)
      throw connection_error("example: no answer by the deadline");  // the outcome is unknown
    std::this_thread::sleep_for(latency);
  }
};

std::shared_ptr<store> store_named(const std::string& name) {
  static std::mutex m;
  static std::map<std::string, std::weak_ptr<store>> stores;
  std::lock_guard g(m);
  auto s = stores[name].lock();
  if (!s) stores[name] = s = std::make_shared<store>();
  return s;
}

// 2. The backend: the seam's required methods, and the optional admin.
class example_backend final : public backend, public store_admin, public hold_breaker {
 public:
  example_backend(std::string name, milliseconds latency)
      : name_(std::move(name)), latency_(latency), store_(store_named(name_)) {}

  // One attempt: empty = busy. Idempotent for the owner (a retry after a lost answer finds its
  // own hold), as every backend's must be.
  std::optional<lease_info> try_acquire(const lock_request& req, steady_time deadline) override {
    if (req.name.empty()) throw config_error("example: empty lock name");
    store_->round_trip(latency_, deadline);
    std::lock_guard g(store_->m);
    auto now = clock::now();
    auto& r = store_->holds[req.name];
    if (r.owner != req.owner && !r.owner.empty() && r.expires > now) return std::nullopt;
    if (r.owner != req.owner) r = record{req.owner, ++store_->fences, {}, req.holder};
    r.expires = now + req.lease;
    lease_info l;
    l.name = req.name;
    l.owner = req.owner;
    l.fence = r.fence;
    return l;
  }

  // false = the hold is gone (expired and taken, or forced).
  bool renew(const lease_info& l, milliseconds duration, steady_time deadline) override {
    store_->round_trip(latency_, deadline);
    std::lock_guard g(store_->m);
    auto it = store_->holds.find(l.name);
    auto now = clock::now();
    if (it == store_->holds.end() || it->second.owner != l.owner || it->second.expires <= now)
      return false;
    it->second.expires = now + duration;
    return true;
  }

  // Owner-checked and idempotent: false when nothing of this owner was held.
  bool release(const lease_info& l, steady_time deadline) override {
    store_->round_trip(latency_, deadline);
    std::lock_guard g(store_->m);
    auto it = store_->holds.find(l.name);
    if (it == store_->holds.end() || it->second.owner != l.owner) return false;
    const bool live = it->second.expires > clock::now();
    store_->holds.erase(it);
    return live;
  }

  // Declare only what the store does: every flag defaults to false. The admin's capabilities
  // (list, force_release, events, sweep) are not declared: they follow from admin() below.
  capabilities caps() const noexcept override {
    capabilities c;
    c.fencing = true;
    c.holder_text = true;
    c.listed_as_taken = true;
    c.linger = true;  // a lease may be shortened, and an unreleased hold stays until it ends
    return c;
  }
  std::string describe() const override { return "example:" + name_; }
  std::string kind() const override { return "example"; }

  // The optional admin: `sqlock list` (list()), and `release --force` (force_release(), which
  // breaker() offers); the capabilities `list` and `force_release` follow from these two. A
  // store with an audit trail or rows to sweep would return them from audit() / sweeper().
  store_admin* admin() noexcept override { return this; }
  hold_breaker* breaker() noexcept override { return this; }
  std::vector<lock_status> list(std::string_view prefix) override {
    std::lock_guard g(store_->m);
    std::vector<lock_status> out;
    auto now = clock::now();
    for (const auto& [n, r] : store_->holds) {
      if (n.compare(0, prefix.size(), prefix) != 0 || r.owner.empty() || r.expires <= now) continue;
      lock_status s;
      s.name = n;
      s.owner = r.owner;
      s.fence = r.fence;
      s.mode =
          "lease";  // what kind of hold this store keeps (a backend's mode() when it has several)
      s.holder = r.holder;
      out.push_back(std::move(s));
    }
    return out;
  }
  // No audit trail here: the actor (who forced it) is not kept.
  bool force_release(std::string_view name, std::string_view /*actor*/) override {
    std::lock_guard g(store_->m);
    auto it = store_->holds.find(std::string(name));
    if (it == store_->holds.end() || it->second.expires <= clock::now()) return false;
    store_->holds.erase(it);
    return true;
  }

 private:
  std::string name_;
  milliseconds latency_;
  std::shared_ptr<store> store_;
};

}  // namespace

// 3. The URL: parse with sqlock::url, refuse unknown parameters, read options with the typed
// readers (one wording of every error, the password never shown).
std::shared_ptr<backend> from_url(const url& u) {
  u.check_params({"latency"});
  const auto latency =
      u.duration_param("latency", milliseconds(0), milliseconds(1000)).value_or(milliseconds(0));
  std::string name = u.path.empty() ? u.hosts.empty() ? "" : u.hosts[0].host : u.path;
  if (name.empty()) throw config_error("example: name a store: example:NAME");
  return std::make_shared<example_backend>(name, latency);
}

}  // namespace example

// 4. The registration the build calls (sqlock_add_backend generates the caller).
namespace backends {
void register_example() {
  register_backend("example", example::from_url);
}
}  // namespace backends

}  // namespace sqlock
