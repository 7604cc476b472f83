#include "sqlock/backend.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <thread>

#include "sqlock/errors.hpp"
#include "sqlock/random.hpp"
#include "sqlock/url.hpp"

namespace sqlock {

void backend::wait_for_change(std::string_view, steady_time until) {
  std::this_thread::sleep_until(until);
}

std::optional<lease_info> backend::acquire(const lock_request& req, steady_time deadline,
                                           const wait_policy& policy) {
  const bool notify = caps().notify;
  for (unsigned attempt = 0;; ++attempt) {
    if (auto l = try_acquire(req)) {
      l->waited = attempt > 0;
      return l;
    }
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return std::nullopt;
    // With notification the wait ends early on a release; the timeout is only a bounded
    // re-check in case a notification was missed. Without it: capped jittered backoff.
    auto delay =
        notify ? policy.notify_recheck : backoff_delay(attempt, policy.initial, policy.cap);
    wait_for_change(req.name, std::min<steady_time>(now + delay, deadline));
  }
}

std::vector<lock_status> backend::list(std::string_view) {
  throw unsupported(kind() + " backend cannot list locks");
}

bool backend::force_release(std::string_view) {
  throw unsupported(kind() + " backend cannot force a release");
}

std::size_t backend::sweep() {
  return 0;
}

namespace {
struct registry {
  std::mutex m;
  std::map<std::string, backend_factory> factories;
};
registry& the_registry() {
  static registry r;
  return r;
}
}  // namespace

void register_backend(const std::string& scheme, backend_factory factory) {
  auto& r = the_registry();
  std::lock_guard g(r.m);
  r.factories[scheme] = std::move(factory);
}

std::shared_ptr<backend> make_backend(const std::string& url_text) {
  url u = url::parse(url_text);
  backend_factory f;
  {
    auto& r = the_registry();
    std::lock_guard g(r.m);
    auto it = r.factories.find(u.scheme);
    if (it == r.factories.end()) {
      std::string known;
      for (const auto& [k, v] : r.factories) known += (known.empty() ? "" : ", ") + k;
      throw config_error("no backend for URL scheme '" + u.scheme + "' in '" + u.redacted() +
                         "' (built in: " + known + ")");
    }
    f = it->second;
  }
  return f(u);
}

std::vector<std::string> registered_schemes() {
  auto& r = the_registry();
  std::lock_guard g(r.m);
  std::vector<std::string> out;
  for (const auto& [k, v] : r.factories) out.push_back(k);
  return out;
}

}  // namespace sqlock
