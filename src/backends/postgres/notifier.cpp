// The listener: LISTEN on its own connection, watch its socket on the driver threads, log what
// arrives, prove the connection alive when idle, reconnect with backoff.
#include "notifier.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <vector>

#include "postgres_driver.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/random.hpp"

namespace sqlock::postgres {

namespace {

// Notifications kept for waiters that have not looked yet; older ones are dropped (a waiter
// that missed some wakes up, as for "anything may have changed").
constexpr std::size_t log_capacity = 4096;
// An idle listener proves its connection alive this often (a dead one is replaced).
constexpr milliseconds keepalive_every{30000};
// Reconnection backoff of the listener.
constexpr milliseconds reconnect_initial{50};
constexpr milliseconds reconnect_cap{2000};

// Hash of a notified name; 0 is reserved for "anything may have changed".
std::size_t name_hash(std::string_view name) {
  auto h = std::hash<std::string_view>{}(name);
  return h == 0 ? 1 : h;
}

std::string quoted_identifier(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

notifier::notifier(std::string conninfo, std::string channel, milliseconds io_timeout,
                   std::shared_ptr<sql::connection_counter> counter, bool deaf_behind_proxy)
    : conninfo_(std::move(conninfo)),
      channel_(std::move(channel)),
      io_timeout_(io_timeout),
      counter_(std::move(counter)),
      deaf_behind_proxy_(deaf_behind_proxy) {}

notifier::~notifier() {
  std::vector<std::function<void()>> woken;
  {
    std::lock_guard g(m_);
    stop_ = true;
    take_armed(0, woken);
  }
  cv_.notify_all();
  for (auto& wake : woken) wake();
  if (stop_fd_ >= 0) {
    const std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(stop_fd_, &one, sizeof one);
  }
  gate_->close();  // a step under way ends first (a connect or exchange at once); none starts
  {
    std::lock_guard g(step_m_);
    readable_.reset();
    conn_.reset();
  }
  if (stop_fd_ >= 0) ::close(stop_fd_);
}

void notifier::ensure_started() {
  {
    std::lock_guard g(m_);
    if (started_ || stop_) return;
    stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (stop_fd_ < 0) return;  // waiters fall back to re-checks
    started_ = true;
  }
  later(std::chrono::steady_clock::now(), &notifier::connect_step);
}

void notifier::later(steady_time when, void (notifier::*step)()) {
  run_in_background(when, [gate = gate_, this, step] { gate->run([&] { (this->*step)(); }); });
}

bool notifier::heard(std::size_t h, std::uint64_t since) const {
  if (stop_ || deaf_.load(std::memory_order_relaxed)) return true;
  if (!log_.empty() && log_.front().first > since + 1) return true;  // some were dropped
  for (auto it = log_.rbegin(); it != log_.rend() && it->first > since; ++it)
    if (it->second == h || it->second == 0) return true;
  return false;
}

void notifier::wait(std::string_view name, std::uint64_t since, steady_time until,
                    const std::stop_token& stop) {
  const auto h = name_hash(name);
  std::unique_lock lk(m_);
  cv_.wait_until(lk, stop, until, [&] { return heard(h, since); });  // or the caller's stop
}

bool notifier::arm(std::string_view name, std::uint64_t since, const void* key,
                   std::function<void()> wake) {
  const auto h = name_hash(name);
  std::lock_guard g(m_);
  if (heard(h, since)) return true;
  armed_[h][key] = std::move(wake);
  return false;
}

void notifier::disarm(std::string_view name, const void* key) {
  const auto h = name_hash(name);
  std::lock_guard g(m_);
  auto it = armed_.find(h);
  if (it == armed_.end()) return;
  it->second.erase(key);
  if (it->second.empty()) armed_.erase(it);
}

void notifier::push(std::size_t h) {
  std::vector<std::function<void()>> woken;
  {
    std::lock_guard g(m_);
    auto s = seq_.load(std::memory_order_relaxed) + 1;
    log_.emplace_back(s, h);
    if (log_.size() > log_capacity) log_.pop_front();
    seq_.store(s, std::memory_order_release);
    take_armed(h, woken);
  }
  cv_.notify_all();
  for (auto& wake : woken) wake();
}

void notifier::take_armed(std::size_t h, std::vector<std::function<void()>>& out) {
  auto take = [&](std::map<const void*, std::function<void()>>& m) {
    for (auto& [key, wake] : m) out.push_back(std::move(wake));
  };
  if (h == 0) {  // anything may have changed: every armed wait
    for (auto& [hash, m] : armed_) take(m);
    armed_.clear();
  } else if (auto it = armed_.find(h); it != armed_.end()) {
    take(it->second);
    armed_.erase(it);
  }
}

void notifier::connect_step() {
  auto bound = [&] { return std::chrono::steady_clock::now() + io_timeout_; };
  std::lock_guard step(step_m_);
  try {
    auto c = std::make_unique<pg_connection>(conninfo_, io_timeout_, stop_fd_, pooling{}, counter_);
    c->connect(bound());
    if (deaf_behind_proxy_ && c->behind_proxy(bound())) {
      // Through a pooler the LISTEN would stay on a server session the pooler hands to others,
      // and notifications would go to them or nowhere: waiters poll instead.
      std::vector<std::function<void()>> woken;
      {
        std::lock_guard g(m_);
        deaf_.store(true, std::memory_order_release);
        take_armed(0, woken);  // they poll from now on
      }
      cv_.notify_all();
      for (auto& wake : woken) wake();
      return;  // the listener ends
    }
    c->exec("LISTEN " + quoted_identifier(channel_), bound());
    conn_ = std::move(c);
  } catch (const error&) {
    reconnect_later();
    return;
  }
  attempt_ = 0;
  last_heard_ = std::chrono::steady_clock::now();
  watch_socket();
  push(0);  // (re)connected: a release may have been missed meanwhile
  keep_alive_later(++generation_);
}

void notifier::read_step() {
  std::lock_guard step(step_m_);
  if (!conn_) return;
  try {
    if (!conn_->alive()) throw connection_error("the listener connection closed");
  } catch (const error&) {
    reconnect_later();
    return;
  }
  log_notifications();
  watch_socket();
}

void notifier::keepalive_step(std::uint64_t generation) {
  std::lock_guard step(step_m_);
  if (!conn_ || generation != generation_) return;  // a connection gone since
  const auto now = std::chrono::steady_clock::now();
  if (now - last_heard_ >= keepalive_every) {
    try {
      conn_->exec("SELECT 1", now + io_timeout_);  // idle: prove the connection alive
    } catch (const error&) {
      reconnect_later();
      return;
    }
    log_notifications();
  }
  keep_alive_later(generation);
}

void notifier::log_notifications() {
  last_heard_ = std::chrono::steady_clock::now();
  for (const auto& payload : conn_->notifications()) push(payload.empty() ? 0 : name_hash(payload));
}

void notifier::keep_alive_later(std::uint64_t generation) {
  run_in_background(last_heard_ + keepalive_every, [gate = gate_, this, generation] {
    gate->run([&] { keepalive_step(generation); });
  });
}

void notifier::reconnect_later() {
  // Waiters meanwhile re-check at their bounded interval.
  readable_.reset();
  conn_.reset();
  later(std::chrono::steady_clock::now() +
            backoff_delay(attempt_++, reconnect_initial, reconnect_cap),
        &notifier::connect_step);
}

void notifier::watch_socket() {
  readable_ = watch_descriptor(conn_->socket(), POLLIN,
                               [gate = gate_, this](short) { gate->run([&] { read_step(); }); });
}

notify_wait::notify_wait(notifier& n, std::string name) : n_(n), name_(std::move(name)) {
  n_.ensure_started();
  since_ = n_.seq();
}

notify_wait::~notify_wait() {
  disarm();
}

}  // namespace sqlock::postgres
