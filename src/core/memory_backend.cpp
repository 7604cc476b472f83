#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "sqlock/backend.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/memory.hpp"
#include "sqlock/url.hpp"

namespace sqlock {
namespace memory {
namespace {

using clock = std::chrono::steady_clock;

class memory_backend;

struct entry {
  std::string owner;
  std::uint64_t fence = 0;
  clock::time_point acquired;
  clock::time_point expires;
  std::string holder;
  std::weak_ptr<memory_backend> by;  // the backend object that acquired it (loss reports)
};

struct store {
  std::mutex m;
  std::condition_variable changed;
  std::map<std::string, entry> locks;
  std::uint64_t fence = 0;
  std::uint64_t releases = 0;  // counts releases: waits compare it with what they saw
  faults f;
};

std::string iso_ago(clock::time_point t) {
  // Memory leases have no wall-clock time; show the offset from now instead.
  auto ms = std::chrono::duration_cast<milliseconds>(t - clock::now()).count();
  std::string out = ms >= 0 ? "+" : "";
  out += std::to_string(ms);
  out += "ms";
  return out;
}

// One acquire() call's wait: ends when a release happened after the call's last look.
class memory_wait final : public wait_state {
 public:
  explicit memory_wait(std::shared_ptr<store> s) : s_(std::move(s)) {
    std::lock_guard g(s_->m);
    seen_ = s_->releases;
  }
  void wait(steady_time until) override {
    std::unique_lock lk(s_->m);
    s_->changed.wait_until(lk, until, [&] { return s_->releases != seen_; });
    seen_ = s_->releases;
  }

 private:
  std::shared_ptr<store> s_;
  std::uint64_t seen_ = 0;
};

class memory_backend final : public backend, public std::enable_shared_from_this<memory_backend> {
 public:
  memory_backend(std::shared_ptr<store> s, std::string name)
      : s_(std::move(s)), name_(std::move(name)) {}

  std::optional<lease_info> try_acquire(const lock_request& req, steady_time deadline,
                                        wait_state*) override {
    hang_while_asked(deadline);
    std::lock_guard g(s_->m);
    check_up();
    auto now = clock::now();
    auto it = s_->locks.find(req.name);
    if (it != s_->locks.end() && it->second.owner == req.owner) {
      return lease_info{req.name, req.owner, it->second.fence, nullptr};  // a retried call
    }
    if (it != s_->locks.end() && it->second.expires > now) return std::nullopt;
    entry e{req.owner, ++s_->fence, now, now + req.lease, req.holder, weak_from_this()};
    s_->locks[req.name] = e;
    return lease_info{req.name, req.owner, e.fence, nullptr};
  }

  std::unique_ptr<wait_state> open_wait(const lock_request&) override {
    return std::make_unique<memory_wait>(s_);
  }

  // Ends a hold as if its session died and tells this backend's listeners at once.
  void lose(const std::string& lock, const std::string& owner) { report_lost(lock, owner); }

  bool renew(const lease_info& l, milliseconds d, steady_time deadline) override {
    hang_while_asked(deadline);
    std::lock_guard g(s_->m);
    check_up();
    if (s_->f.renew_refused) return false;
    auto it = s_->locks.find(l.name);
    auto now = clock::now();
    if (it == s_->locks.end() || it->second.owner != l.owner || it->second.expires <= now)
      return false;
    it->second.expires = now + d;
    return true;
  }

  bool release(const lease_info& l, steady_time deadline) override {
    hang_while_asked(deadline);
    bool released = false;
    {
      std::lock_guard g(s_->m);
      check_up();
      auto it = s_->locks.find(l.name);
      if (it != s_->locks.end() && it->second.owner == l.owner) {
        s_->locks.erase(it);
        ++s_->releases;
        released = true;
      }
    }
    if (released) s_->changed.notify_all();
    return released;
  }

  std::vector<lock_status> list(std::string_view prefix) override {
    std::lock_guard g(s_->m);
    check_up();
    std::vector<lock_status> out;
    auto now = clock::now();
    for (auto& [name, e] : s_->locks) {
      if (e.expires <= now || name.compare(0, prefix.size(), prefix) != 0) continue;
      out.push_back(
          {name, e.owner, e.fence, iso_ago(e.acquired), iso_ago(e.expires), "memory", e.holder});
    }
    return out;
  }

  bool force_release(std::string_view name) override {
    bool released = false;
    {
      std::lock_guard g(s_->m);
      check_up();
      released = s_->locks.erase(std::string(name)) > 0;
      if (released) ++s_->releases;
    }
    if (released) s_->changed.notify_all();
    return released;
  }

  std::size_t sweep() override {
    std::lock_guard g(s_->m);
    check_up();
    auto now = clock::now();
    return std::erase_if(s_->locks, [&](const auto& kv) { return kv.second.expires <= now; });
  }

  capabilities caps() const noexcept override {
    capabilities c;
    c.notify = true;
    c.sweep = true;
    c.cross_process = false;
    return c;
  }
  std::string describe() const override { return "memory:" + name_; }
  std::string kind() const override { return "memory"; }

 private:
  // Fault injection: a backend call that does not answer (a blackholed connection) until the
  // fault is cleared or the call's deadline passes (then its outcome is unknown).
  void hang_while_asked(steady_time deadline) const {
    while (s_->f.hang) {
      if (clock::now() >= deadline)
        throw connection_error("memory store '" + name_ +
                               "' did not answer in time (fault injected)");
      std::this_thread::sleep_for(milliseconds(5));
    }
  }
  void check_up() const {
    if (s_->f.down) throw connection_error("memory store '" + name_ + "' is down (fault injected)");
  }
  std::shared_ptr<store> s_;
  std::string name_;
};

std::shared_ptr<store> store_named(const std::string& name) {
  static std::mutex m;
  static std::map<std::string, std::shared_ptr<store>> stores;
  std::lock_guard g(m);
  auto& s = stores[name];
  if (!s) s = std::make_shared<store>();
  return s;
}

}  // namespace

std::shared_ptr<backend> open(const std::string& name) {
  return std::make_shared<memory_backend>(store_named(name), name);
}

faults& faults_of(const std::string& name) {
  return store_named(name)->f;
}

bool end_session(const std::string& store_name, const std::string& lock) {
  auto s = store_named(store_name);
  entry e;
  {
    std::lock_guard g(s->m);
    auto it = s->locks.find(lock);
    if (it == s->locks.end()) return false;
    e = std::move(it->second);
    s->locks.erase(it);
    ++s->releases;
  }
  s->changed.notify_all();
  if (auto b = e.by.lock()) b->lose(lock, e.owner);
  return true;
}

}  // namespace memory

namespace backends {
void register_memory() {
  register_backend("memory", [](const url& u) {
    u.check_params({});
    if (u.has_authority) throw config_error("memory URL takes no host: use memory: or memory:NAME");
    return memory::open(u.path);
  });
}
}  // namespace backends

}  // namespace sqlock
