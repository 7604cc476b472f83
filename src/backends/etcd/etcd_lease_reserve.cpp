#include "etcd_lease_reserve.hpp"

namespace sqlock::etcd::detail {

namespace {
using clock = std::chrono::steady_clock;
}

lease_reserve::lease_reserve(gateway& gw) : gw_(gw), th_([this] { run(); }) {}

lease_reserve::~lease_reserve() {
  {
    std::lock_guard g(m_);
    stop_ = true;
    for (auto& [ttl, list] : ready_)
      for (auto& s : list) revoke_.push_back(s.id);
    ready_.clear();
  }
  cv_.notify_all();
  th_.join();
}

bool lease_reserve::young(const reserved_lease& s) const {
  return clock::now() - s.sent < std::chrono::milliseconds(s.ttl_s * 1000 / 4);
}

reserved_lease lease_reserve::grant(std::int64_t ttl_s, steady_time deadline) {
  reserved_lease s;
  s.sent = clock::now();
  auto r = gw_.call("lease/grant", {{"TTL", std::to_string(ttl_s)}}, deadline);
  s.id = num(r, "ID");
  s.ttl_s = num(r, "TTL");
  if (s.id == 0) throw backend_error("etcd granted no lease");
  return s;
}

reserved_lease lease_reserve::take(std::int64_t ttl_s, steady_time deadline) {
  std::optional<reserved_lease> got;
  {
    std::lock_guard g(m_);
    auto& list = ready_[ttl_s];
    while (!list.empty() && !got) {
      if (young(list.back()))
        got = list.back();
      else
        revoke_.push_back(list.back().id);
      list.pop_back();
    }
    // Steady use (a reserved lease was there and is now gone): have the next one ready. A first use
    // (a one-shot `sqlock run`) grants only what it needs.
    if (got && list.empty()) wanted_.insert(ttl_s);
  }
  cv_.notify_all();
  return got ? *got : grant(ttl_s, deadline);
}

void lease_reserve::put_back(const reserved_lease& s) {
  std::lock_guard g(m_);
  auto& list = ready_[s.ttl_s];
  if (stop_ || !young(s) || list.size() >= max_per_ttl) {
    revoke_.push_back(s.id);
    cv_.notify_all();
  } else {
    list.push_back(s);
  }
}

void lease_reserve::revoke_later(std::int64_t id) {
  {
    std::lock_guard g(m_);
    revoke_.push_back(id);
  }
  cv_.notify_all();
}

// Grants the wanted reserved leases and revokes what is given up, off the callers' paths.
void lease_reserve::run() {
  std::unique_lock lk(m_);
  for (;;) {
    cv_.wait(lk, [&] { return stop_ || !wanted_.empty() || !revoke_.empty(); });
    auto revoke = std::move(revoke_);
    revoke_.clear();
    std::vector<std::int64_t> wanted;
    if (!stop_) wanted.assign(wanted_.begin(), wanted_.end());
    wanted_.clear();
    bool stopping = stop_;
    lk.unlock();
    for (auto id : revoke) {
      try {
        gw_.call("lease/revoke", {{"ID", std::to_string(id)}}, clock::now() + gw_.timeout());
      } catch (const error&) {
        // Already gone, or unreachable: the lease ends at its TTL.
      }
    }
    std::vector<reserved_lease> granted;
    for (auto ttl : wanted) {
      try {
        granted.push_back(grant(ttl, clock::now() + gw_.timeout()));
      } catch (const error&) {
        // The next take() grants synchronously and says what is wrong.
      }
    }
    lk.lock();
    for (auto& s : granted) {
      auto& list = ready_[s.ttl_s];
      if (stop_ || list.size() >= max_per_ttl)
        revoke_.push_back(s.id);
      else
        list.insert(list.begin(), s);  // older than what callers gave back
    }
    if (stopping && revoke_.empty()) return;
    if (stop_ && revoke_.empty()) return;
  }
}

}  // namespace sqlock::etcd::detail
