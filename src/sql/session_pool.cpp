// The dedicated sessions of session-bound holds and the watch that notices their death while
// they are idle (session_pool.hpp).
#include "sql/session_pool.hpp"

#include <poll.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "sql/connection_budget.hpp"
#include "sqlock/backend/background.hpp"
#include "sqlock/errors.hpp"

namespace sqlock::sql {

// Named (not anonymous): session_pool::session holds a turn, and a unity build compiles this
// file as a header of another, where a field of an anonymous type is an error.
namespace session_parts {

// One call at a time on a session: a flag under a mutex, waited for by a deadline. (A
// std::timed_mutex would do, but ThreadSanitizer does not see its timed lock and then reports
// races that are not there.)
class turn {
 public:
  bool take_until(steady_time deadline) {
    std::unique_lock lk(m_);
    if (!cv_.wait_until(lk, deadline, [this] { return !taken_; })) return false;
    taken_ = true;
    return true;
  }
  bool try_take() {
    std::lock_guard g(m_);
    if (taken_) return false;
    taken_ = true;
    return true;
  }
  void give() {
    {
      std::lock_guard g(m_);
      taken_ = false;
    }
    cv_.notify_one();
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool taken_ = false;
};

// The watch's turn on a session (taken only if free), given back at the end of the scope.
class watcher_turn {
 public:
  explicit watcher_turn(turn& t) : t_(t.try_take() ? &t : nullptr) {}
  ~watcher_turn() {
    if (t_) t_->give();
  }
  watcher_turn(const watcher_turn&) = delete;
  watcher_turn& operator=(const watcher_turn&) = delete;
  explicit operator bool() const { return t_ != nullptr; }

 private:
  turn* t_;
};

}  // namespace session_parts
using namespace session_parts;

struct session_pool::session {
  turn t;                                // one call (or the watch's look) at a time
  std::unique_ptr<pooled_session> conn;  // null until opened
  std::atomic<bool> dead{false};         // killed; the pool replaces it (read unlocked)
  std::atomic<int> fd{-1};               // the open connection's socket (read unlocked)
  std::atomic<bool> unwatched{false};    // hung up while busy: its call's end looks
  std::atomic<bool> holding{false};      // carries a hold (read unlocked by the watch)
  bool set_up = false;                   // the backend's one-time setup ran on it
  std::map<std::string, session_hold, std::less<>> holds;  // name -> hold carried by it
};

// What the watch of the sessions shares with the pool: it outlives the pool when the pool is
// destroyed by a loss listener that look() called (dropping the last reference).
struct session_pool::shared : std::enable_shared_from_this<shared> {
  std::mutex m;  // guards sessions, next, lost, hung_up and the look's flags
  std::vector<std::shared_ptr<session>> sessions;  // `turns` taken in turn, then the waiters
  std::size_t turns = 1;
  session_spread spread = session_spread::round_robin;
  std::size_t next = 0;                                         // where pick() starts looking
  std::vector<std::pair<std::string, std::string>> lost;        // (name, owner) not yet reported
  std::vector<std::pair<std::weak_ptr<session>, int>> hung_up;  // watches fired: its socket
  // look() runs on a driver thread, one at a time, through `gate` (closed by the pool's
  // destructor): queued, running, to run again when it ends.
  bool look_queued = false;
  bool looking = false;
  bool look_again = false;
  task_gate gate;
  bool ping_queued = false;               // a look in ping_every is on the driver's timers
  std::vector<descriptor_watch> watches;  // of the idle sessions' sockets; look()'s only
  session_driver open;
  session_loss on_lost;

  // Has look() run soon: a session changed, a loss to report, a watch fired.
  void poke() {
    {
      std::lock_guard g(m);
      if (gate.closed()) return;
      if (looking) {
        look_again = true;
        return;
      }
      if (std::exchange(look_queued, true)) return;
    }
    run_in_background(std::chrono::steady_clock::now(), [w = weak_from_this()] {
      if (auto sh = w.lock()) sh->gate.run([&] { sh->look(); });
    });
  }
  // Closes a session whose turn the caller has; its holds but `except` are to be reported.
  void kill(session& s, const std::string& except) {
    s.dead = true;
    s.fd = -1;
    s.conn.reset();
    {
      std::lock_guard g(m);
      for (auto& [name, h] : s.holds)
        if (name != except) lost.emplace_back(name, h.owner);
    }
    s.holds.clear();
    s.holding = false;
    poke();
  }
  void look();
  void watch_sockets();
  // The session in slot `i` (a new one if empty or dead).
  std::shared_ptr<session> at(std::size_t i) {
    std::lock_guard g(m);
    auto& s = sessions[i];
    if (!s || s->dead) s = std::make_shared<session>();
    return s;
  }
  // The session calls take in turn at `next`; then advances `next` by `step`.
  std::shared_ptr<session> slot(std::size_t step) {
    std::size_t i;
    {
      std::lock_guard g(m);
      i = next % turns;
      next += step;
    }
    return at(i);
  }
  // A session calls take that is free (its turn taken), per `spread`: round_robin, the first
  // from `next` on that is free or yet to be opened (`next` then points past it); first_free,
  // the first open one that is free, else one yet to be opened. Null when every one is in a
  // call.
  std::shared_ptr<session> free_one() {
    std::lock_guard g(m);
    const bool round = spread == session_spread::round_robin;
    for (int pass = round ? 1 : 0; pass < 2; ++pass) {  // first_free: open ones, then new ones
      for (std::size_t k = 0; k < turns; ++k) {
        const std::size_t i = round ? (next + k) % turns : k;
        auto& s = sessions[i];
        const bool empty = !s || s->dead;
        if (pass == 0 && empty) continue;
        if (empty) s = std::make_shared<session>();
        if (!s->t.try_take()) continue;
        if (s->dead || (pass == 0 && !s->conn)) {  // killed meanwhile, or not open yet
          s->t.give();
          continue;
        }
        if (round) next = i + 1;
        return s;
      }
    }
    return nullptr;
  }
  // Opens the connection of a session whose turn the caller has, by `deadline`.
  void connect(session& s, steady_time deadline) {
    if (s.conn) return;
    try {
      s.conn = open(deadline);
    } catch (...) {
      s.dead = true;  // never opened: nothing to report
      throw;
    }
    s.fd = s.conn->socket();
    poke();  // one more socket to watch
  }
};

namespace {

// How often the holding sessions whose socket is not known are pinged (ms).
constexpr int ping_every = 100;

// True when `fd` has something to read right now.
bool readable_now(int fd) {
  pollfd p{fd, POLLIN | POLLRDHUP, 0};
  return fd >= 0 && ::poll(&p, 1, 0) > 0;
}

}  // namespace

// One look at the sessions: the hang-ups the watches saw (a dead idle session is killed, its
// holds lost), the losses reported (with no lock held: a listener may call back into the
// backend, or destroy the pool), then the idle sessions' sockets watched again.
void session_pool::shared::look() {
  std::vector<std::pair<std::weak_ptr<session>, int>> fired;
  {
    std::lock_guard g(m);
    look_queued = false;
    if (gate.closed()) return;
    looking = true;
    look_again = false;
    fired.swap(hung_up);
  }
  // A session that hung up while busy is left to its call, which looks at its end; so is one
  // still alive (not watched again before its next call ends).
  for (auto& [weak, fd] : fired) {
    auto s = weak.lock();
    if (!s || s->dead) continue;
    watcher_turn t(s->t);
    if (t && !s->dead && s->conn && s->conn->socket() == fd && !s->conn->alive())
      kill(*s, {});
    else if (!s->dead)
      s->unwatched = true;
  }
  std::vector<std::pair<std::string, std::string>> gone;
  {
    std::lock_guard g(m);
    gone.swap(lost);
  }
  bool stopped = false;
  for (auto& [name, owner] : gone) {
    if ((stopped = gate.closed())) break;  // the pool is destroyed (maybe by this listener)
    on_lost(name, owner);
  }
  if (!stopped) watch_sockets();
  bool again;
  {
    std::lock_guard g(m);
    looking = false;
    again = look_again && !gate.closed();
  }
  if (again) poke();
}

// Watches the socket of every open session for a hang-up only (POLLRDHUP; POLLHUP and POLLERR
// come anyway): the answers of calls do not fire the watches, so a call needs no look. A
// holding session whose socket the driver cannot tell is pinged every ping_every instead.
void session_pool::shared::watch_sockets() {
  std::vector<std::shared_ptr<session>> all;
  {
    std::lock_guard g(m);
    all = sessions;
  }
  std::vector<descriptor_watch> fresh;
  bool ping = false;
  for (auto& s : all) {
    if (!s || s->dead || s->unwatched) continue;
    const int fd = s->fd;
    if (fd < 0) {
      ping = ping || s->holding;
      continue;
    }
    fresh.push_back(watch_descriptor(
        fd, POLLRDHUP, [w = weak_from_this(), weak = std::weak_ptr<session>(s), fd](short) {
          auto sh = w.lock();
          if (!sh) return;
          {
            std::lock_guard g(sh->m);
            sh->hung_up.emplace_back(weak, fd);
          }
          sh->poke();
        }));
  }
  watches.swap(fresh);  // the previous ones go with `fresh`
  if (!ping) return;
  for (auto& s : all) {
    if (!s || s->dead || s->fd >= 0 || !s->holding) continue;
    watcher_turn t(s->t);  // a session in a call is left to that call
    if (t && !s->dead && s->conn && s->conn->socket() < 0 && !s->conn->alive()) kill(*s, {});
  }
  {
    std::lock_guard g(m);
    if (std::exchange(ping_queued, true)) return;
  }
  run_in_background(std::chrono::steady_clock::now() + std::chrono::milliseconds(ping_every),
                    [w = weak_from_this()] {
                      auto sh = w.lock();
                      if (!sh) return;
                      {
                        std::lock_guard g(sh->m);
                        sh->ping_queued = false;
                      }
                      sh->poke();
                    });
}

session_pool::session_pool(std::size_t size, std::size_t waiters, session_driver open,
                           session_loss lost, session_spread spread)
    : sh_(std::make_shared<shared>()) {
  if (size == 0) throw config_error("a session pool needs at least one session");
  sh_->sessions.resize(size + waiters);
  sh_->turns = size;
  sh_->spread = spread;
  sh_->open = std::move(open);
  sh_->on_lost = std::move(lost);
}

session_pool::~session_pool() {
  // A look under way finishes first, unless it is the one destroying the pool (a loss
  // listener): it reports nothing more after this.
  sh_->gate.close();
}

session_pool::call::call(std::shared_ptr<session> s, std::shared_ptr<shared> sh)
    : s_(std::move(s)), sh_(std::move(sh)) {}

session_pool::call::call(call&& o) noexcept : s_(std::move(o.s_)), sh_(std::move(o.sh_)) {}

session_pool::call::~call() {
  if (!s_) return;
  // The server may have closed the session while the call ran or just after: look now.
  if (s_->conn && readable_now(s_->conn->socket()) && !s_->conn->alive()) sh_->kill(*s_, {});
  if (s_->conn && s_->conn->socket() != s_->fd) {
    s_->fd = s_->conn->socket();  // the connection was closed (or reopened) by the call
    s_->unwatched = true;
  }
  s_->t.give();
  if (s_->unwatched.exchange(false)) sh_->poke();  // to be watched again
}

pooled_session& session_pool::call::conn() {
  return *s_->conn;
}

const session_hold* session_pool::call::held(const std::string& name) const {
  auto it = s_->holds.find(name);
  return it == s_->holds.end() ? nullptr : &it->second;
}

void session_pool::call::keep(const std::string& name, session_hold h) {
  s_->holds[name] = std::move(h);
  s_->holding = true;
}

void session_pool::call::forget(const std::string& name) {
  s_->holds.erase(name);
  s_->holding = !s_->holds.empty();
}

bool session_pool::call::empty() const {
  return s_->holds.empty();
}

void session_pool::call::kill(const std::string& except) {
  sh_->kill(*s_, except);
}

bool session_pool::call::is_set_up() const {
  return s_->set_up;
}

void session_pool::call::set_up() {
  s_->set_up = true;
}

std::shared_ptr<void> session_pool::call::token() const {
  return s_;
}

session_pool::call session_pool::pick(steady_time deadline) {
  const auto wait_until = connection_wait_deadline(deadline);
  for (;;) {
    if (auto s = sh_->free_one()) {
      call c(s, sh_);
      sh_->connect(*s, deadline);
      return c;
    }
    auto s = sh_->slot(1);
    if (!s->t.take_until(wait_until))
      throw pool_busy("every lock session stayed busy with other calls until the deadline");
    call c(s, sh_);
    if (s->dead) continue;  // killed while we waited: take the next one
    sh_->connect(*s, deadline);
    return c;
  }
}
std::optional<session_pool::call> session_pool::idle_waiter(steady_time deadline) {
  for (std::size_t i = sh_->turns; i < sh_->sessions.size(); ++i) {
    auto s = sh_->at(i);
    if (!s->t.try_take()) continue;
    call c(s, sh_);
    if (s->dead || !s->holds.empty()) continue;
    sh_->connect(*s, deadline);
    return c;
  }
  return std::nullopt;
}

void session_pool::open_next(steady_time deadline) {
  auto s = sh_->slot(0);
  if (!s->t.take_until(deadline)) return;  // in use: it is open or opening
  call c(s, sh_);
  if (!s->dead) sh_->connect(*s, deadline);
}

std::optional<session_pool::call> session_pool::holding(const std::shared_ptr<void>& token,
                                                        const std::string& name,
                                                        const std::string& owner,
                                                        steady_time deadline) {
  auto s = std::static_pointer_cast<session>(token);
  if (!s) return std::nullopt;
  if (!s->t.take_until(connection_wait_deadline(deadline)))
    throw pool_busy("the lock session stayed busy past the deadline");
  call c(s, sh_);
  auto it = s->holds.find(name);
  if (s->dead || !s->conn || it == s->holds.end() || it->second.owner != owner) return std::nullopt;
  return c;
}

}  // namespace sqlock::sql
