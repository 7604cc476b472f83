// sqlock::election: a campaign is an exclusive hold whose holder text is the campaign value;
// the leader is read from list() of the exact name; observe() polls it from its own thread.
#include "sqlock/election.hpp"

#include <condition_variable>
#include <mutex>
#include <thread>

#include "hold_maker.hpp"

namespace sqlock {

struct election::state {
  std::shared_ptr<detail::client_impl> c;
  std::string name;
  election_options opts;
  mutable std::mutex m;
  hold term;  // kept after resign(): lost() of the last term still answers
  bool campaigning = false;
  std::shared_ptr<detail::loss_callback> on_lost = std::make_shared<detail::loss_callback>();

  // A term for `value`, by `deadline` (one attempt unless `wait`); empty when not elected by
  // then. Its loss calls `cb` (null: the term's own callback).
  hold take_term(const std::string& value, steady_time deadline, bool wait,
                 const std::stop_token& stop, std::shared_ptr<detail::loss_callback> cb) const {
    if (value.empty()) throw config_error("a campaign of election '" + name + "' needs a value");
    return detail::hold_maker::take(c, name, {.lease = opts.lease},
                                    {.holder = value, .stop = stop, .on_lost = std::move(cb)},
                                    deadline, wait);
  }
  // The current term's core (null when none), read under `m`.
  std::shared_ptr<detail::lock_handle> term_core() const {
    std::lock_guard g(m);
    return detail::hold_maker::core(term);
  }
};

struct observation::state {
  std::mutex m;
  std::condition_variable cv;
  bool stop = false;
  std::thread t;
};

namespace {
// The leader of `st`'s name: the exclusive hold of that exact name with the highest fence.
// Throws unsupported when the store cannot tell who leads: it cannot list holds, or keeps no
// holder text (the leader's value).
void check_readable(const election::state& st) {
  const auto c = capabilities_of(st.c->b());
  if (!c.list)
    throw unsupported(st.c->b().kind() + " cannot list holds, so the leader cannot be read");
  if (!c.holder_text)
    throw unsupported(st.c->b().describe() +
                      " keeps no holder text, so the leader's value cannot be read");
}

std::optional<leader_info> leader_of(const election::state& st) {
  check_readable(st);
  std::optional<leader_info> best;
  for (const auto& s : st.c->b().admin()->list(st.name)) {
    if (s.name != st.name || s.kind != lock_kind::exclusive) continue;
    if (!best || s.fence > best->term) best = leader_info{s.holder, s.fence};
  }
  return best;
}
}  // namespace

// ---- observation ----

observation& observation::operator=(observation&& o) noexcept {
  if (this != &o) {
    stop();
    st_ = std::move(o.st_);
  }
  return *this;
}

observation::~observation() {
  stop();
}

void observation::stop() noexcept {
  if (!st_) return;
  {
    std::lock_guard g(st_->m);
    st_->stop = true;
  }
  st_->cv.notify_all();
  if (st_->t.joinable()) {
    if (st_->t.get_id() == std::this_thread::get_id())
      st_->t.detach();  // stopped from its own callback
    else
      st_->t.join();
  }
  st_.reset();
}

// ---- election ----

election client::make_election(std::string name) const {
  return make_election(std::move(name), election_options{});
}

election client::make_election(std::string name, const election_options& opts) const {
  detail::check_options(name, {.lease = opts.lease});
  if (opts.poll.count() < 0) throw config_error("poll of election '" + name + "' must be >= 0");
  auto s = std::make_shared<election::state>();
  s->c = impl_;
  s->name = std::move(name);
  s->opts = opts;
  if (s->opts.poll.count() == 0) s->opts.poll = std::max(opts.lease / 4, milliseconds(1));
  return election(std::move(s));
}

election::election(std::shared_ptr<state> s) : st_(std::move(s)) {}
election::election(election&&) noexcept = default;

election& election::operator=(election&& o) noexcept {
  if (this != &o) {
    election old(std::move(*this));
    st_ = std::move(o.st_);
  }
  return *this;
}

election::~election() {
  if (!st_) return;
  st_->on_lost->set(nullptr);  // a callback running ends first
  resign();
}

void election::campaign(const std::string& value, std::stop_token stop) {
  campaign_until_steady(value, steady_time::max(), std::move(stop));
}

bool election::try_campaign(const std::string& value) {
  return campaign_until_steady(value, steady_time{});
}

bool election::campaign_until_steady(const std::string& value, steady_time deadline,
                                     std::stop_token stop) {
  if (!st_) throw usage_error("election handle was moved from");
  auto& st = *st_;
  const auto last = st.term_core();  // lost() without st.m: it may wait for a callback
  const bool leads = last && last->held() && !last->lost();
  hold lost_term;  // a term found lost ends here: campaigning again is how a leader comes back
  {
    std::lock_guard g(st.m);
    if (leads || st.campaigning || detail::hold_maker::core(st.term) != last)
      throw usage_error("election '" + st.name + "': this participant already leads or campaigns");
    lost_term = std::move(st.term);
    st.campaigning = true;
  }
  lost_term.release();
  hold h;
  try {
    const bool once = deadline == steady_time{};
    h = st.take_term(value, once ? std::chrono::steady_clock::now() : deadline, !once, stop,
                     st.on_lost);
  } catch (...) {
    std::lock_guard g(st.m);
    st.campaigning = false;
    throw;
  }
  std::lock_guard g(st.m);
  st.campaigning = false;
  if (!h) return false;
  st.term = std::move(h);
  return true;
}

hold election::lead(const std::string& value, std::stop_token stop) {
  return try_lead_until_steady(value, steady_time::max(), std::move(stop));
}

hold election::try_lead(const std::string& value) {
  if (!st_) throw usage_error("election handle was moved from");
  return st_->take_term(value, std::chrono::steady_clock::now(), false, {}, nullptr);
}

hold election::try_lead_until_steady(const std::string& value, steady_time deadline,
                                     std::stop_token stop) {
  if (!st_) throw usage_error("election handle was moved from");
  return st_->take_term(value, deadline, true, stop, nullptr);
}

void election::resign() noexcept {
  if (!st_) return;
  hold h;
  {
    std::lock_guard g(st_->m);
    h = std::move(st_->term);
  }
  h.release();
  std::lock_guard g(st_->m);
  if (!st_->term) st_->term = std::move(h);  // released: kept for lost()
}

bool election::is_leader() const {
  if (!st_) return false;
  auto core = st_->term_core();  // lost() without st_->m: it may wait for a callback
  return core && core->held() && !core->lost();
}

std::uint64_t election::term() const {
  if (!st_) throw usage_error("election handle was moved from");
  std::lock_guard g(st_->m);
  if (!st_->term) throw usage_error("election '" + st_->name + "': this participant does not lead");
  return st_->term.fence();
}

std::optional<leader_info> election::leader() const {
  if (!st_) throw usage_error("election handle was moved from");
  return leader_of(*st_);
}

observation election::observe(std::function<void(const std::optional<leader_info>&)> cb) const {
  if (!st_) throw usage_error("election handle was moved from");
  if (!cb) throw config_error("observe() of election '" + st_->name + "' needs a callback");
  check_readable(*st_);
  auto o = std::make_shared<observation::state>();
  o->t = std::thread([o, self = st_, cb = std::move(cb)] {
    std::optional<leader_info> seen;
    bool first = true;
    std::unique_lock lk(o->m);
    while (!o->stop) {
      lk.unlock();
      try {
        auto now = leader_of(*self);
        if (first || now != seen) {
          first = false;
          seen = now;
          cb(now);
        }
      } catch (...) {
        // The store did not answer (or the callback failed): read again next period.
      }
      lk.lock();
      o->cv.wait_for(lk, self->opts.poll, [&] { return o->stop; });
    }
  });
  return observation(std::move(o));
}

bool election::lost() const {
  if (!st_) return false;
  auto core = st_->term_core();
  return core && core->lost();
}

void election::on_lost(std::function<void(const std::string&)> cb) {
  if (!st_) throw usage_error("election handle was moved from");
  st_->on_lost->set(std::move(cb));
}

const std::string& election::name() const {
  if (!st_) throw usage_error("election handle was moved from");
  return st_->name;
}

}  // namespace sqlock

namespace sqlock::detail {

hold_maker::target hold_maker::of(const election& e, const std::string& value) {
  if (!e.st_) throw usage_error("election handle was moved from");
  if (value.empty())
    throw config_error("a campaign of election '" + e.st_->name + "' needs a value");
  return {e.st_->c, e.st_->name, {.lease = e.st_->opts.lease}, {.holder = value}};
}

}  // namespace sqlock::detail
