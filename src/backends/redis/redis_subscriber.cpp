// The pub/sub listener and the interest registrations (see redis_subscriber.hpp).
#include "redis_subscriber.hpp"

#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "sqlock/errors.hpp"

namespace sqlock::redis::detail {

// ---- subscriber ----

subscriber::subscriber(std::vector<node_address> nodes, const settings& s, std::string channel_head,
                       std::string channel_tail)
    : s_(s), head_(std::move(channel_head)), tail_(std::move(channel_tail)) {
  for (auto& n : nodes) links_.push_back(link{std::move(n)});
  if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0)
    throw connection_error(std::string("cannot create a pipe: ") + std::strerror(errno));
  thread_ = std::thread([this] { run(); });
}

subscriber::~subscriber() {
  {
    std::lock_guard g(reg_->m);
    reg_->stop = true;
  }
  char b = 1;
  [[maybe_unused]] auto n = ::write(wake_[1], &b, 1);
  thread_.join();
  for (auto& l : links_) drop(l);
  ::close(wake_[0]);
  ::close(wake_[1]);
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
    // connects, authenticates; the listener thread holds no caller, so its own I/O bound is used
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

void subscriber::run() {
  using clock = std::chrono::steady_clock;
  for (;;) {
    {
      std::lock_guard g(reg_->m);
      if (reg_->stop) return;
    }
    auto now = clock::now();
    steady_time next = now + std::chrono::seconds(1);
    for (auto& l : links_) {
      if (l.c) continue;
      if (now < l.retry_at) {
        next = std::min(next, l.retry_at);
        continue;
      }
      if (subscribe(l)) {
        l.backoff = milliseconds(0);
        {
          std::lock_guard g(reg_->m);
          ++reg_->ready;
        }
        bump_all();  // releases during the outage went unheard: everyone re-checks
        reg_->ready_cv.notify_all();
      } else {
        l.backoff = reconnect_backoff(l.backoff);
        l.retry_at = clock::now() + l.backoff;
        next = std::min(next, l.retry_at);
      }
    }
    std::vector<pollfd> fds;
    std::vector<link*> owners;
    fds.push_back(pollfd{wake_[0], POLLIN, 0});
    owners.push_back(nullptr);
    for (auto& l : links_) {
      if (!l.c) continue;
      fds.push_back(pollfd{l.c->fd, POLLIN, 0});
      owners.push_back(&l);
    }
    auto ms = std::chrono::ceil<milliseconds>(next - clock::now()).count();
    int n = ::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<long long>(ms, 0, 1000)));
    if (n <= 0) continue;
    if (fds[0].revents) {
      char buf[64];
      while (::read(wake_[0], buf, sizeof buf) > 0) {
      }
    }
    for (std::size_t i = 1; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      link& l = *owners[i];
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
          on_message(v.at(2).str());
      }
      if (!ok) {
        drop(l);
        {
          std::lock_guard g(reg_->m);
          --reg_->ready;
        }
        l.backoff = reconnect_backoff(l.backoff);
        l.retry_at = clock::now() + l.backoff;
        bump_all();
      }
    }
  }
}

}  // namespace sqlock::redis::detail
