// The seam's shared parts: the default acquisition, what follows from a backend's optional
// interfaces, loss listeners, and the helpers for bounded waits.
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

std::unique_ptr<acquisition> backend::make_acquisition(const lock_request& req,
                                                       const wait_policy& policy) {
  return std::make_unique<polling_acquisition>(*this, req, policy);
}

polling_acquisition::polling_acquisition(backend& b, lock_request req, const wait_policy& policy)
    : backend_(b), req_(std::move(req)), initial_(policy.initial), cap_(policy.cap) {}

std::optional<lease_info> polling_acquisition::attempt(steady_time deadline) {
  return backend_.try_acquire(req_, deadline);
}

void polling_acquisition::wait(steady_time until, const std::stop_token& stop) {
  auto delay = backoff_delay(waits_++, initial_, cap_);
  sleep_until(std::min<steady_time>(std::chrono::steady_clock::now() + delay, until), stop);
}

capabilities capabilities_of(backend& b) noexcept {
  auto c = b.caps();
  auto* a = b.admin();
  c.list = a != nullptr;
  c.force_release = a && a->breaker();
  c.events = a && a->audit();
  c.sweep = a && a->sweeper();
  c.waiting = a && a->waiters();
  c.schema = b.schema() != nullptr;
  return c;
}

store_admin& admin_of(backend& b, const char* what) {
  if (auto* a = b.admin()) return *a;
  throw unsupported(b.kind() + " backend cannot " + what);
}

schema_owner& schema_of(backend& b) {
  if (auto* s = b.schema()) return *s;
  throw unsupported(b.kind() + " keeps no schema: nothing to migrate");
}

bool store_admin::force_release(std::string_view name, std::string_view actor) {
  if (auto* b = breaker()) return b->force_release(name, actor);
  throw unsupported("this store cannot release a hold regardless of its owner");
}

std::vector<lock_event> store_admin::events(std::string_view prefix, std::size_t limit) {
  if (auto* a = audit()) return a->events(prefix, limit);
  throw unsupported("this store keeps no audit trail of lock events");
}

std::vector<waiting_request> store_admin::waiting(std::string_view prefix) {
  if (auto* w = waiters()) return w->waiting(prefix);
  throw unsupported("this store cannot tell which requests wait for a lock");
}

std::size_t store_admin::sweep() {
  auto* s = sweeper();
  return s ? s->sweep() : 0;
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

}  // namespace sqlock
