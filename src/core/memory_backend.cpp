// The in-process backend (see sqlock/memory.hpp). Each name keeps its live holders: one
// exclusive holder, any number of shared holders, or up to N permit holders; fences come from
// one counter per store, so every hold's fence exceeds every earlier hold's. A busy exclusive
// acquire() leaves a writer mark (keyed by its wait state) that keeps new shared holders out
// until that call ends or the mark's short expiry passes.
#include <algorithm>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "sqlock/backend.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/memory.hpp"
#include "sqlock/url.hpp"

namespace sqlock {
namespace memory {
namespace {

using clock = std::chrono::steady_clock;

// How long a writer mark keeps new shared holders out after the attempt that set it, unless
// its acquire() call ends first. Each attempt of the call renews it.
constexpr milliseconds mark_expiry{5000};

class memory_backend;

struct holding {
  std::string owner;
  std::uint64_t fence = 0;
  clock::time_point acquired;
  clock::time_point expires;
  std::string holder;
  lock_kind kind = lock_kind::exclusive;
  std::uint32_t permits = 0;
  std::weak_ptr<memory_backend> by;  // the backend object that acquired it (loss reports)
};

// The live holders of one name and the marks of waiting exclusive requests.
struct name_state {
  std::vector<holding> holders;
  std::map<const void*, clock::time_point> writer_marks;  // wait state -> mark expiry

  void drop_expired(clock::time_point now) {
    std::erase_if(holders, [&](const holding& h) { return h.expires <= now; });
    std::erase_if(writer_marks, [&](const auto& kv) { return kv.second <= now; });
  }
  holding* find(const std::string& owner) {
    auto it = std::find_if(holders.begin(), holders.end(),
                           [&](const holding& h) { return h.owner == owner; });
    return it == holders.end() ? nullptr : &*it;
  }
  bool empty() const { return holders.empty() && writer_marks.empty(); }
};

// An armed asynchronous wait (acquisition::arm) and whether its request is a shared one.
struct armed_wait {
  bool shared = false;
  std::function<void()> wake;
};

// The waiting requests of one name: what a release of the name wakes, and nothing else.
struct name_watch {
  std::uint64_t releases = 0;       // holds of the name ended: every wait compares it
  std::uint64_t marks_dropped = 0;  // writer marks dropped: only shared requests wait for those
  std::size_t acquisitions = 0;     // the live acquisitions of the name (the entry goes with them)
  std::condition_variable_any changed;      // blocking waits
  std::map<const void*, armed_wait> armed;  // armed waits

  // What a wait of a request of that kind compares.
  std::uint64_t changes(bool shared) const { return shared ? releases + marks_dropped : releases; }
};

struct store {
  std::mutex m;
  std::map<std::string, name_state> names;
  std::map<std::string, name_watch> watched;  // names that live acquisitions wait for
  std::uint64_t fence = 0;
  faults f;

  // With m held: counts a hold of `name` that ended (or, with `mark_only`, a writer mark that
  // was dropped, which only shared requests wait for), wakes the blocking waits and hands over
  // the armed wake-ups it concerns, which the caller runs once m is no longer held. Waits of
  // other names are left alone: 10,000 waits on 1,000 names cost one wake-up each per release.
  std::vector<std::function<void()>> released(const std::string& name, bool mark_only = false) {
    std::vector<std::function<void()>> wake;
    auto it = watched.find(name);
    if (it == watched.end()) return wake;
    auto& w = it->second;
    ++(mark_only ? w.marks_dropped : w.releases);
    w.changed.notify_all();
    for (auto a = w.armed.begin(); a != w.armed.end();) {
      if (mark_only && !a->second.shared) {
        ++a;
        continue;
      }
      wake.push_back(std::move(a->second.wake));
      a = w.armed.erase(a);
    }
    return wake;
  }
};

// Runs the wake-ups store::released() handed over.
void wake_all(const std::vector<std::function<void()>>& wake) {
  for (const auto& fn : wake) fn();
}

std::string iso_ago(clock::time_point t) {
  // Memory leases have no wall-clock time; show the offset from now instead.
  auto ms = std::chrono::duration_cast<milliseconds>(t - clock::now()).count();
  std::string out = ms >= 0 ? "+" : "";
  out += std::to_string(ms);
  out += "ms";
  return out;
}

// Whether `req` may join the live holders `hs` (busy otherwise); config_error on a permit
// count that differs from the holders'.
bool admits(const std::vector<holding>& hs, const lock_request& req, bool writer_waiting) {
  if (hs.empty()) return req.kind != lock_kind::shared || !writer_waiting;
  const auto& first = hs.front();
  switch (req.kind) {
    case lock_kind::exclusive:
      return false;
    case lock_kind::shared:
      return first.kind == lock_kind::shared && !writer_waiting;
    case lock_kind::permit:
      if (first.kind != lock_kind::permit) return false;
      if (first.permits != req.permits)
        throw config_error("semaphore '" + req.name + "' has " + std::to_string(first.permits) +
                           " permits; a request for " + std::to_string(req.permits) +
                           " permits does not agree");
      return hs.size() < req.permits;
  }
  return false;
}

class memory_backend final : public backend,
                             public store_admin,
                             public hold_breaker,
                             public expiry_sweeper,
                             public std::enable_shared_from_this<memory_backend> {
 public:
  memory_backend(std::shared_ptr<store> s, std::string name)
      : s_(std::move(s)), name_(std::move(name)) {}

  std::optional<lease_info> try_acquire(const lock_request& req, steady_time deadline) override {
    return attempt(req, deadline, nullptr);
  }

  // One attempt; `ws` identifies the waiting request whose writer mark a busy exclusive attempt
  // leaves (null: a single try, no mark).
  std::optional<lease_info> attempt(const lock_request& req, steady_time deadline, const void* ws) {
    hang_while_asked(deadline);
    std::lock_guard g(s_->m);
    check_up();
    auto now = clock::now();
    auto& st = s_->names[req.name];
    st.drop_expired(now);
    if (auto* mine = st.find(req.owner))
      return lease_info{req.name, req.owner, mine->fence, nullptr};  // a retried call
    bool writer_waiting = std::any_of(st.writer_marks.begin(), st.writer_marks.end(),
                                      [&](const auto& kv) { return kv.first != ws; });
    bool ok = false;
    try {
      ok = admits(st.holders, req, writer_waiting);
    } catch (...) {
      if (st.empty()) s_->names.erase(req.name);
      throw;
    }
    if (!ok) {
      if (req.kind == lock_kind::exclusive && ws) st.writer_marks[ws] = now + mark_expiry;
      if (st.empty()) s_->names.erase(req.name);
      return std::nullopt;
    }
    if (ws) st.writer_marks.erase(ws);
    st.holders.push_back({req.owner, ++s_->fence, now, now + req.lease, req.holder, req.kind,
                          req.kind == lock_kind::permit ? req.permits : 0, weak_from_this()});
    return lease_info{req.name, req.owner, st.holders.back().fence, nullptr};
  }

  std::unique_ptr<acquisition> make_acquisition(const lock_request& req,
                                                const wait_policy&) override;

  // Ends a hold as if its session died and tells this backend's listeners at once.
  void lose(const std::string& lock, const std::string& owner) { report_lost(lock, owner); }

  bool renew(const lease_info& l, milliseconds d, steady_time deadline) override {
    hang_while_asked(deadline);
    std::lock_guard g(s_->m);
    check_up();
    if (s_->f.renew_refused) return false;
    auto now = clock::now();
    auto it = s_->names.find(l.name);
    auto* h = it == s_->names.end() ? nullptr : it->second.find(l.owner);
    if (!h || h->expires <= now) return false;
    h->expires = now + d;
    return true;
  }

  bool release(const lease_info& l, steady_time deadline) override {
    hang_while_asked(deadline);
    bool released = false;
    std::vector<std::function<void()>> wake;
    {
      std::lock_guard g(s_->m);
      check_up();
      auto it = s_->names.find(l.name);
      if (it != s_->names.end()) {
        released = std::erase_if(it->second.holders,
                                 [&](const holding& h) { return h.owner == l.owner; }) > 0;
        if (it->second.empty()) s_->names.erase(it);
      }
      if (released) wake = s_->released(l.name);
    }
    wake_all(wake);
    return released;
  }

  store_admin* admin() noexcept override { return this; }
  hold_breaker* breaker() noexcept override { return this; }
  expiry_sweeper* sweeper() noexcept override { return this; }

  std::vector<lock_status> list(std::string_view prefix) override {
    std::lock_guard g(s_->m);
    check_up();
    std::vector<lock_status> out;
    auto now = clock::now();
    for (auto& [name, st] : s_->names) {
      if (name.compare(0, prefix.size(), prefix) != 0) continue;
      for (const auto& h : st.holders) {
        if (h.expires <= now) continue;
        out.push_back({name, h.owner, h.fence, iso_ago(h.acquired), iso_ago(h.expires), "memory",
                       h.holder, h.kind, h.permits});
      }
    }
    return out;
  }

  // No audit trail here: the actor (who forced it) is not kept.
  bool force_release(std::string_view name, std::string_view /*actor*/) override {
    bool released = false;
    std::vector<std::function<void()>> wake;
    {
      std::lock_guard g(s_->m);
      check_up();
      const std::string n(name);
      auto it = s_->names.find(n);
      if (it != s_->names.end()) {
        it->second.drop_expired(clock::now());
        released = !it->second.holders.empty();
        it->second.holders.clear();
        if (it->second.empty()) s_->names.erase(it);
      }
      if (released) wake = s_->released(n);
    }
    wake_all(wake);
    return released;
  }

  std::size_t sweep() override {
    std::lock_guard g(s_->m);
    check_up();
    auto now = clock::now();
    std::size_t n = 0;
    for (auto it = s_->names.begin(); it != s_->names.end();) {
      auto& hs = it->second.holders;
      n += std::erase_if(hs, [&](const holding& h) { return h.expires <= now; });
      it = it->second.empty() ? s_->names.erase(it) : std::next(it);
    }
    return n;
  }

  capabilities caps() const noexcept override {
    capabilities c;
    c.fencing = c.fencing_safe = true;
    c.holder_text = true;
    c.listed_as_taken = true;
    c.linger = true;
    c.notify = true;
    c.cross_process = false;
    c.shared = true;
    c.permits = true;
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

// One waiting request: its wait ends when a release happened after its last look; its end
// without the hold clears the writer mark its busy exclusive attempts left.
class memory_acquisition final : public acquisition {
 public:
  memory_acquisition(memory_backend& b, std::shared_ptr<store> s, lock_request req)
      : b_(b), s_(std::move(s)), req_(std::move(req)) {
    std::lock_guard g(s_->m);
    watch_ = &s_->watched[req_.name];  // std::map: the entry stays where it is
    ++watch_->acquisitions;
    seen_ = changes();
  }
  ~memory_acquisition() override {
    disarm();
    cancel();
    std::lock_guard g(s_->m);
    if (--watch_->acquisitions == 0) s_->watched.erase(req_.name);
  }

  std::optional<lease_info> attempt(steady_time deadline) override {
    return b_.attempt(req_, deadline, this);
  }
  void wait(steady_time until, const std::stop_token& stop) override {
    std::unique_lock lk(s_->m);
    watch_->changed.wait_until(lk, stop, until, [&] { return changes() != seen_; });
    seen_ = changes();
  }
  std::optional<steady_time> arm(steady_time until, waker wake) override {
    std::lock_guard g(s_->m);
    if (changes() != seen_) {  // released since the last look: try again at once
      seen_ = changes();
      return clock::now();
    }
    watch_->armed[this] = {req_.kind == lock_kind::shared, std::move(wake)};
    return until;
  }
  void disarm() noexcept override {
    std::lock_guard g(s_->m);
    watch_->armed.erase(this);
  }
  void cancel() noexcept override {
    std::vector<std::function<void()>> wake;
    {
      std::lock_guard g(s_->m);
      auto it = s_->names.find(req_.name);
      if (it != s_->names.end() && it->second.writer_marks.erase(this) > 0) {
        // Shared requests may come in now unless another mark or a writer keeps them out.
        const auto& st = it->second;
        const bool opens = st.writer_marks.empty() &&
                           (st.holders.empty() || st.holders.front().kind == lock_kind::shared);
        if (st.empty()) s_->names.erase(it);
        if (opens) wake = s_->released(req_.name, true);
      }
    }
    wake_all(wake);
  }

 private:
  // With s_->m held: what this request's waits compare.
  std::uint64_t changes() const { return watch_->changes(req_.kind == lock_kind::shared); }

  memory_backend& b_;
  std::shared_ptr<store> s_;
  lock_request req_;
  name_watch* watch_ = nullptr;  // the name's entry in s_->watched, kept while this lives
  std::uint64_t seen_ = 0;
};

std::unique_ptr<acquisition> memory_backend::make_acquisition(const lock_request& req,
                                                              const wait_policy&) {
  return std::make_unique<memory_acquisition>(*this, s_, req);
}

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
  std::vector<holding> ended;
  std::vector<std::function<void()>> wake;
  {
    std::lock_guard g(s->m);
    auto it = s->names.find(lock);
    if (it == s->names.end() || it->second.holders.empty()) return false;
    ended = std::move(it->second.holders);
    it->second.holders.clear();
    if (it->second.empty()) s->names.erase(it);
    wake = s->released(lock);
  }
  wake_all(wake);
  for (const auto& h : ended)
    if (auto b = h.by.lock()) b->lose(lock, h.owner);
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
