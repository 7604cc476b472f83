#include "sqlock/backend.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "sqlock/errors.hpp"
#include "sqlock/random.hpp"
#include "sqlock/url.hpp"

namespace sqlock {

const char* to_string(lock_kind k) noexcept {
  switch (k) {
    case lock_kind::shared:
      return "shared";
    case lock_kind::permit:
      return "permit";
    case lock_kind::exclusive:
      break;
  }
  return "exclusive";
}

void require_kind(const backend& b, const lock_request& req) {
  if (req.kind == lock_kind::exclusive) return;
  const auto c = b.caps();
  const bool ok = req.kind == lock_kind::shared ? c.shared : c.permits;
  if (!ok) {
    auto m = b.mode();
    throw unsupported(b.kind() + (m.empty() ? "" : " (" + m + ")") + " does not offer " +
                      (req.kind == lock_kind::shared ? "shared locks" : "semaphore permits"));
  }
  if (req.kind == lock_kind::permit && req.permits == 0)
    throw config_error("a semaphore needs at least one permit");
}

std::unique_ptr<wait_state> backend::open_wait(const lock_request&) {
  return nullptr;
}

std::optional<lease_info> backend::acquire(const lock_request& req, steady_time deadline,
                                           const wait_policy& policy) {
  auto ws = open_wait(req);
  unsigned busy = 0;      // busy attempts so far
  unsigned failures = 0;  // consecutive attempts whose outcome was unknown
  steady_time failing_since{};
  for (;;) {
    const auto sent = std::chrono::steady_clock::now();
    std::optional<lease_info> l;
    try {
      l = try_acquire(req, std::max(deadline, sent + policy.min_attempt), ws.get());
      failures = 0;
    } catch (const connection_error& ex) {
      // The store is restarting, a connection was reset, a call ran out of time: try again
      // within the deadline (the same owner token finds its own hold if the reply was lost).
      auto now = std::chrono::steady_clock::now();
      if (failures == 0) failing_since = sent;
      if (now >= deadline || now - failing_since >= policy.retry_for) throw;
      if (policy.on_retry) policy.on_retry(req.name, ex.what());
      auto delay = backoff_delay(failures++, policy.initial * 10, policy.retry_cap);
      // Stopped in the pause: the last attempt's outcome is still unknown, so this ends as it
      // would at the deadline (the core releases what that attempt may hold, then tells the
      // caller of the stop).
      if (!sleep_until(std::min<steady_time>(now + delay, deadline), req.stop)) throw;
      continue;
    }
    if (l) {
      l->waited = busy > 0;
      // The attempt knows better when it waited in the server for a session-bound hold.
      if (l->sent == steady_time{}) l->sent = sent;
      return l;
    }
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline || req.stop.stop_requested()) return std::nullopt;
    // With a wait state the wait ends early on a release; the timeout is only a bounded
    // re-check in case a notification was missed. Without it: capped jittered backoff. Both
    // end at once on a stop.
    if (ws) {
      ws->wait(std::min<steady_time>(now + policy.notify_recheck, deadline), req.stop);
    } else {
      auto delay = backoff_delay(busy, policy.initial, policy.cap);
      sleep_until(std::min<steady_time>(now + delay, deadline), req.stop);
    }
    if (req.stop.stop_requested()) return std::nullopt;
    ++busy;
  }
}

void backend::renew_all(std::vector<renewal>& batch) noexcept {
  for (auto& r : batch) {
    r.sent = std::chrono::steady_clock::now();
    try {
      r.result = renew(*r.lease, r.duration, r.deadline) ? renewal::outcome::renewed
                                                         : renewal::outcome::gone;
    } catch (const std::exception& ex) {
      r.result = renewal::outcome::unknown;
      r.error = ex.what();
    } catch (...) {
      r.result = renewal::outcome::unknown;
      r.error = "unknown error";
    }
  }
}

int backend::migrate() {
  throw unsupported(kind() + " keeps no schema: nothing to migrate");
}

std::string backend::migration_script() const {
  throw unsupported(kind() + " keeps no schema: nothing to migrate");
}

struct backend::listeners {
  std::mutex m;
  std::map<std::uint64_t, loss_listener> all;
  std::uint64_t next = 1;
};

backend::backend() : listeners_(std::make_shared<listeners>()) {}

std::uint64_t backend::add_loss_listener(loss_listener l) {
  std::lock_guard g(listeners_->m);
  auto id = listeners_->next++;
  listeners_->all.emplace(id, std::move(l));
  return id;
}

void backend::remove_loss_listener(std::uint64_t id) {
  std::lock_guard g(listeners_->m);
  listeners_->all.erase(id);
}

void backend::report_lost(const std::string& name, const std::string& owner) {
  std::vector<loss_listener> copy;
  {
    std::lock_guard g(listeners_->m);
    for (auto& [id, l] : listeners_->all) copy.push_back(l);
  }
  for (auto& l : copy) {
    try {
      l(name, owner);
    } catch (...) {
      // A listener's failure must not stop the backend's watcher.
    }
  }
}

bool sleep_until(steady_time until, const std::stop_token& stop) {
  if (!stop.stop_possible()) {
    std::this_thread::sleep_until(until);
    return true;
  }
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lk(m);
  return !cv.wait_until(lk, stop, until, [] { return false; }) && !stop.stop_requested();
}

stop_fd::stop_fd(const std::stop_token& stop) {
  if (!stop.stop_possible()) return;
  fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd_ < 0) throw error("eventfd failed: cannot wait for a stop");
  on_stop_ = std::make_unique<std::stop_callback<std::function<void()>>>(
      stop, std::function<void()>([fd = fd_] {
        std::uint64_t one = 1;
        (void)!::write(fd, &one, sizeof one);
      }));
}

stop_fd::~stop_fd() {
  on_stop_.reset();  // waits for a callback that is running: the descriptor outlives it
  if (fd_ >= 0) ::close(fd_);
}

steady_time exchange_bound(steady_time deadline, milliseconds io_timeout) {
  auto now = std::chrono::steady_clock::now();
  if (deadline - now <= io_timeout) return deadline;
  return now + io_timeout;
}

std::vector<lock_status> backend::list(std::string_view) {
  throw unsupported(kind() + " backend cannot list locks");
}

std::vector<lock_event> backend::events(std::string_view, std::size_t) {
  throw unsupported(kind() + " backend keeps no audit trail of lock events");
}

bool backend::force_release(std::string_view) {
  throw unsupported(kind() + " backend cannot force a release");
}

std::size_t backend::sweep() {
  return 0;
}

}  // namespace sqlock
