// The client's deletion watch (etcd_wait.hpp): its streams, their restarts, and the delivery of
// deletions to waiters (blocked on their condition or armed with a wake-up).
#include "etcd_wait.hpp"

#include <algorithm>
#include <thread>
#include <utility>
#include <vector>

#include "sqlock/random.hpp"

namespace sqlock::etcd::detail {

namespace {

// The restarter's pauses while no member confirms a stream: jittered, doubling from the first
// to the cap (backoff_delay).
constexpr std::chrono::milliseconds restart_pause_first{50};
constexpr std::chrono::milliseconds restart_pause_cap{1000};
constexpr auto restart_idle = std::chrono::seconds(60);

}  // namespace

deletion_watch::deletion_watch(gateway& gw, const std::string& prefix,
                               std::function<void(const std::string&)> on_delete,
                               std::function<void(steady_time)> on_resumed)
    : gw_(gw),
      base_(prefix.empty() ? std::string() : prefix + "/"),
      on_delete_(std::move(on_delete)),
      on_resumed_(std::move(on_resumed)) {}

deletion_watch::~deletion_watch() {
  stop();
}

void deletion_watch::start(steady_time deadline) {
  std::shared_ptr<stream> old;
  {
    std::lock_guard g(m_);
    if (closed_ || (stream_ && !stream_->ended())) return;
    try {
      old = open(deadline);
    } catch (const error&) {
      // No member now: confirmed() tries again, on every member.
    }
  }
  if (old) old->stop();  // it ended: its reader thread is done
}

confirmation deletion_watch::confirmed(steady_time deadline) {
  for (unsigned replaced = 0;; ++replaced) {
    start(deadline);
    std::shared_ptr<stream> s;
    std::uint64_t gen = 0;
    {
      std::lock_guard g(m_);
      if (closed_) throw connection_error("etcd: the client is closing");
      s = stream_;
      gen = generation_;
      std::lock_guard st(started_m_);
      if (started_at_ > 0) return {gen, started_at_};
    }
    // Its member has one member's attempt to start it (with one member, the whole deadline);
    // the wait holds no lock, so a caller with an earlier deadline is never held up by it.
    if (s && s->wait_started(gw_.member_attempt_end(deadline))) {
      std::unique_lock lk(started_m_);
      // The reader thread records the start revision right after the stream says it started.
      cv_.wait_until(lk, deadline, [&] { return started_at_ > 0 || generation_ != gen; });
      if (generation_ == gen && started_at_ > 0) return {gen, started_at_};
    }
    if (std::chrono::steady_clock::now() >= deadline)
      throw connection_error("etcd: no member confirmed a watch in time");
    // The stream ended unconfirmed, or its member did not start it in time: the next one, on
    // the next member, after a pause when streams keep ending at once.
    if (replaced > 0)
      std::this_thread::sleep_until(std::min(
          deadline, std::chrono::steady_clock::now() +
                        backoff_delay(replaced - 1, restart_pause_first, restart_pause_cap)));
    std::shared_ptr<stream> old;
    {
      std::lock_guard g(m_);
      if (stream_ == s && !closed_) {
        gw_.prefer_next_member();
        old = open(deadline);
      }
    }
    if (old) old->stop();
  }
}

std::shared_ptr<stream> deletion_watch::open(steady_time deadline) {
  std::shared_ptr<stream> old = std::move(stream_);
  const auto gen = ++generation_;
  {
    std::lock_guard st(started_m_);
    started_at_ = 0;
  }
  cv_.notify_all();  // a wait for the stream it replaces ends
  // No start revision: the stream starts at the current one, served by etcd at once.
  json create = {{"key", b64(base_)},
                 {"range_end", b64(prefix_end(base_))},
                 {"filters", json::array({"NOPUT"})}};
  live_generation_ = 0;
  try {
    stream_ = gw_.open_stream(
        "watch", {{"create_request", create}}, [this, gen](const json& msg) { deliver(msg, gen); },
        [this, gen] { ended(gen); }, deadline);
    live_generation_ = gen;
    // A stream that ended before the line above: its ended() found nothing to clear.
    if (stream_->ended()) end_generation(gen);
  } catch (...) {
    if (old) old->stop();
    throw;
  }
  return old;
}

bool deletion_watch::live(std::uint64_t generation) {
  // Never m_: waiters ask with their deletions' mutex held, which ended() takes, and open()
  // holds m_ while it stops a stream that failed to start (waiting for its reader's ended()).
  return generation != 0 && live_generation_ == generation;
}

void deletion_watch::end_generation(std::uint64_t generation) {
  live_generation_.compare_exchange_strong(generation, 0);
}

void deletion_watch::stop() {
  std::shared_ptr<stream> s;
  {
    std::lock_guard g(m_);
    closed_ = true;
    s = std::move(stream_);
    ++generation_;
    live_generation_ = 0;
    std::lock_guard st(started_m_);
    started_at_ = 0;
  }
  cv_.notify_all();
  if (s) s->stop();  // a restart waiting for this stream's confirmation returns
  std::thread restarter;
  {
    std::lock_guard g(restart_m_);
    restart_closed_ = true;
    restarter = std::move(restarter_);
  }
  restart_cv_.notify_all();
  if (restarter.joinable()) restarter.join();  // its calls are bounded by the gateway's timeout
}

void deletion_watch::deliver(const json& msg, std::uint64_t generation) {
  if (msg.value("created", false)) {
    {
      std::lock_guard st(started_m_);  // never m_: see started_m_
      if (generation == generation_)
        started_at_ = std::max<std::int64_t>(1, num(msg["header"], "revision"));
    }
    cv_.notify_all();
  }
  auto it = msg.find("events");
  if (it == msg.end()) return;
  for (const auto& ev : *it) {
    auto kv = ev.find("kv");
    if (kv == ev.end()) continue;
    const std::string key = unb64(kv->value("key", ""));
    const std::int64_t revision = num(*kv, "mod_revision");  // of a deletion: the deletion's
    std::vector<std::function<void()>> wakes;
    {
      std::lock_guard g(subs_m_);
      for (auto& [pfx, into] : subs_) {
        if (key.compare(0, pfx.size(), pfx) != 0) continue;
        {
          std::lock_guard k(into->m);
          auto& at = into->keys[key];
          at = std::max(at, revision);
          if (into->wake) wakes.push_back(std::exchange(into->wake, nullptr));
        }
        into->cv.notify_all();
      }
    }
    for (auto& wake : wakes) wake();  // asynchronous waiters' next steps (cheap, never block)
    on_delete_(key);
  }
}

void deletion_watch::ended(std::uint64_t generation) {
  end_generation(generation);
  if (generation == generation_) {
    // Holders rely on the stream too: the restarter replaces it now, not at a renewal.
    std::lock_guard g(restart_m_);
    if (!restart_closed_) {
      restart_wanted_ = true;
      if (!restarter_.joinable()) restarter_ = std::thread([this] { restart_loop(); });
    }
  }
  restart_cv_.notify_all();
  // Waiters wait on their own deletions' condition with the deletion watch's liveness in the
  // predicate: wake them all, so that they watch again (confirmed()) and read what they may have
  // missed.
  cv_.notify_all();
  std::vector<std::function<void()>> wakes;
  {
    std::lock_guard g(subs_m_);
    for (auto& [pfx, into] : subs_) {
      {
        std::lock_guard k(into->m);  // a waiter between its check and its wait sees the wake
        if (into->wake) wakes.push_back(std::exchange(into->wake, nullptr));
      }
      into->cv.notify_all();
    }
  }
  for (auto& wake : wakes) wake();
}

void deletion_watch::restart_loop() {
  unsigned failures = 0;
  std::unique_lock lk(restart_m_);
  for (;;) {
    // Idle until a stream ends by itself or stop(), which both notify (the bound only makes
    // the thread look again).
    if (!restart_cv_.wait_for(lk, restart_idle, [&] { return restart_wanted_ || restart_closed_; }))
      continue;
    if (restart_closed_) return;
    restart_wanted_ = false;
    lk.unlock();
    bool resumed = false;
    try {
      const auto deadline = std::chrono::steady_clock::now() + gw_.timeout();
      confirmed(deadline);
      on_resumed_(deadline);
      resumed = true;
    } catch (const std::exception&) {
      // No member confirms a stream (or answers the backend's reads) now: again after a pause.
    }
    lk.lock();
    if (resumed) {
      failures = 0;
      continue;
    }
    restart_wanted_ = true;
    const auto pause = backoff_delay(failures++, restart_pause_first, restart_pause_cap);
    restart_cv_.wait_for(lk, pause, [&] { return restart_closed_; });
  }
}

deletion_watch::subscription::subscription(deletion_watch& f, const std::string& pfx,
                                           deletions& into)
    : f_(f) {
  std::lock_guard g(f_.subs_m_);
  it_ = f_.subs_.emplace(pfx, &into);
}

deletion_watch::subscription::~subscription() {
  std::lock_guard g(f_.subs_m_);
  f_.subs_.erase(it_);
}

}  // namespace sqlock::etcd::detail
