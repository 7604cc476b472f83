// The pub/sub listener and the interest registrations (see redis_subscriber.hpp).
#include "redis_subscriber.hpp"

#include <hiredis/hiredis.h>
#include <poll.h>

#include <chrono>

#include "sqlock/errors.hpp"

namespace sqlock::redis::detail {

// ---- subscriber ----

subscriber::subscriber(std::vector<node_address> nodes, const settings& s, std::string channel_head,
                       std::string channel_tail)
    : s_(s), head_(std::move(channel_head)), tail_(std::move(channel_tail)) {
  for (auto& n : nodes) links_.push_back(std::make_unique<link>(std::move(n)));
  for (auto& l : links_) later(std::chrono::steady_clock::now(), *l, &subscriber::subscribe_step);
}

subscriber::~subscriber() {
  {
    std::lock_guard g(reg_->m);
    reg_->stop = true;
  }
  gate_->close();  // a step under way ends first; none starts after
  for (auto& l : links_) {
    std::lock_guard g(l->m);
    l->readable.reset();
    drop(*l);
  }
  bump_all();
  reg_->ready_cv.notify_all();
}

interest::interest(std::shared_ptr<wait_registry> reg, std::string key)
    : reg_(std::move(reg)), key_(std::move(key)) {
  std::lock_guard g(reg_->m);
  auto& slot = reg_->waiters[key_];
  if (!slot) slot = std::make_shared<wait_registry::waiter>();
  w_ = slot;
  ++w_->count;
  gen_ = w_->gen;
  was_ready_ = reg_->ready > 0;
}

interest::~interest() {
  std::lock_guard g(reg_->m);
  w_->wakers.erase(this);
  if (--w_->count == 0) {
    auto it = reg_->waiters.find(key_);
    if (it != reg_->waiters.end() && it->second == w_) reg_->waiters.erase(it);
  }
}

void interest::wait(steady_time until, const std::stop_token& stop) {
  std::unique_lock lk(reg_->m);
  if (!was_ready_) {
    // No subscription stood when the attempt was sent: a release may have gone unheard, so
    // return as soon as one stands; the caller re-checks.
    reg_->ready_cv.wait_until(lk, stop, until, [&] { return reg_->ready > 0 || reg_->stop; });
    return;
  }
  w_->cv.wait_until(lk, stop, until, [&] { return w_->gen != gen_ || reg_->stop; });
}

void interest::attempt_starts() {
  std::lock_guard g(reg_->m);
  seen_ = w_->gen;
}

interest::armed interest::arm(std::function<void()> wake) {
  std::lock_guard g(reg_->m);
  if (reg_->stop || w_->gen != seen_) return armed::heard;
  if (reg_->ready == 0) return armed::cannot;
  w_->wakers[this] = std::move(wake);
  return armed::wake_armed;
}

void interest::disarm() noexcept {
  std::lock_guard g(reg_->m);
  w_->wakers.erase(this);
}

namespace {
// Bumps `w`'s generation; its armed wake-ups move to `out` (called after the lock is let go).
void bump(wait_registry::waiter& w, std::vector<std::function<void()>>& out) {
  ++w.gen;
  w.cv.notify_all();
  for (auto& [key, wake] : w.wakers) out.push_back(std::move(wake));
  w.wakers.clear();
}
}  // namespace

void subscriber::on_message(std::string_view channel) {
  if (channel.size() < head_.size() + tail_.size() || channel.substr(0, head_.size()) != head_ ||
      channel.substr(channel.size() - tail_.size()) != tail_)
    return;
  std::string key(channel.substr(head_.size(), channel.size() - head_.size() - tail_.size()));
  std::vector<std::function<void()>> woken;
  {
    std::lock_guard g(reg_->m);
    auto it = reg_->waiters.find(key);
    if (it != reg_->waiters.end()) bump(*it->second, woken);
  }
  for (auto& wake : woken) wake();
}

void subscriber::bump_all() {
  std::vector<std::function<void()>> woken;
  {
    std::lock_guard g(reg_->m);
    for (auto& [k, w] : reg_->waiters) bump(*w, woken);
  }
  for (auto& wake : woken) wake();
}

bool subscriber::subscribe(link& l) {
  try {
    // connects, authenticates; the listener holds no caller, so its own I/O bound is used
    connection conn(l.addr, s_, std::chrono::steady_clock::now() + s_.timeout);
    std::string pattern = head_ + "*" + tail_;
    auto r = conn.command({"PSUBSCRIBE", pattern});
    reply_view v{r.get()};
    if (v.is_error()) throw_reply_error(*r, "Redis PSUBSCRIBE");
    if (v.size("PSUBSCRIBE") < 1 || v.at(0).str() != "psubscribe")
      throw backend_error("unexpected reply to PSUBSCRIBE");
    l.c = conn.release_context();  // the listener owns it from now on
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

void subscriber::drop(link& l) {
  if (l.c) redisFree(l.c);
  l.c = nullptr;
}

void subscriber::later(steady_time when, link& l, void (subscriber::*step)(link&)) {
  run_in_background(when, [gate = gate_, this, &l, step] { gate->run([&] { (this->*step)(l); }); });
}

void subscriber::subscribe_step(link& l) {
  std::unique_lock lk(l.m);
  if (l.c) return;
  if (!subscribe(l)) {
    retry_later(l);
    return;
  }
  l.backoff = milliseconds(0);
  watch_socket(l);
  lk.unlock();
  {
    std::lock_guard g(reg_->m);
    ++reg_->ready;
  }
  bump_all();  // releases during the outage went unheard: everyone re-checks
  reg_->ready_cv.notify_all();
}

void subscriber::read_step(link& l) {
  std::vector<std::string> channels;
  bool failed = false;
  {
    std::lock_guard lk(l.m);
    if (!l.c) return;
    bool ok = redisBufferRead(l.c) == REDIS_OK;
    while (ok) {
      void* raw = nullptr;
      if (redisGetReplyFromReader(l.c, &raw) != REDIS_OK) {
        ok = false;
        break;
      }
      if (!raw) break;
      reply_ptr r(static_cast<redisReply*>(raw));
      reply_view v{r.get()};
      if (r->type == REDIS_REPLY_ARRAY && r->elements >= 4 && v.at(0).str() == "pmessage")
        channels.emplace_back(v.at(2).str());
    }
    failed = !ok;
    if (failed) {
      drop(l);
      retry_later(l);
    } else {
      watch_socket(l);
    }
  }
  if (failed) {
    std::lock_guard g(reg_->m);
    --reg_->ready;
  }
  for (const auto& ch : channels) on_message(ch);
  if (failed) bump_all();  // releases until the next subscription go unheard: re-check
}

void subscriber::retry_later(link& l) {
  l.readable.reset();
  l.backoff = reconnect_backoff(l.backoff);
  later(std::chrono::steady_clock::now() + l.backoff, l, &subscriber::subscribe_step);
}

void subscriber::watch_socket(link& l) {
  l.readable = watch_descriptor(
      l.c->fd, POLLIN, [gate = gate_, this, &l](short) { gate->run([&] { read_step(l); }); });
}

}  // namespace sqlock::redis::detail
