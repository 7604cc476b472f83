// The asynchronous acquire driver (async_driver.hpp): a queue of ready steps and a timer heap
// served by a few threads. One step of an acquisition makes one attempt and then arms its
// wake-up and a timer; a wake-up, the timer or a stop puts it back in the queue. A step of
// one acquisition runs on one thread at a time; wake-ups of an older wait are ignored. A thread
// with nothing else to do waits in poll(2) for the descriptor watches (watch_descriptor), one
// thread at a time; the others wait on a condition variable.
#include "async_driver.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <queue>
#include <system_error>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/acquire_steps.hpp"
#include "core/process_instance.hpp"
#include "sqlock/backend/background.hpp"

namespace sqlock::detail {
namespace {

using clock = std::chrono::steady_clock;

// How long a driver thread running tasks back to back may leave the descriptor watches
// unpolled.
constexpr auto poll_at_least_every = std::chrono::milliseconds(10);

// One acquisition being driven.
struct op : std::enable_shared_from_this<op> {
  op(std::unique_ptr<acquisition> acq, lock_request r, steady_time deadline, wait_policy p,
     acquired_fn fn)
      : a(std::move(acq)),
        req(std::move(r)),
        policy(std::move(p)),
        steps(*a, req, deadline, policy),
        done(std::move(fn)) {}

  std::unique_ptr<acquisition> a;
  const lock_request req;
  const wait_policy policy;
  acquire_steps steps;  // used by the one step running at a time
  acquired_fn done;
  std::unique_ptr<std::stop_callback<std::function<void()>>> on_stop;
  bool armed = false;  // used by the one step running at a time

  // Under m:
  std::mutex m;
  std::uint64_t seq = 0;  // the current wait: wake-ups and timers of an older one are ignored
  bool queued = false;    // in the ready queue
  bool running = false;   // a step runs now
  bool again = false;     // woken while a step ran: queue it again after
  bool finished = false;
};

class engine {
 public:
  // The process's engine: never destroyed (a client destroyed during static destruction may
  // still end its requests), and a fresh one in a child after fork() (threads do not survive
  // it).
  static engine& get() { return process_instance<engine>(); }

  engine() {
    wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
    for (unsigned i = 0, n = async_driver::thread_count(); i < n; ++i)
      threads_.emplace_back([this] { loop(); });
  }
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;

  void start(const std::shared_ptr<op>& o) {
    {
      std::lock_guard g(m_);
      live_.insert(o);  // kept until it ends: its wake-ups and timers keep weak references
    }
    {
      // Queued before the stop callback exists: a stop already requested (which runs the
      // callback at once, on this thread) finds it queued and adds nothing.
      std::lock_guard g(o->m);
      o->queued = true;
    }
    o->on_stop = std::make_unique<std::stop_callback<std::function<void()>>>(
        o->req.stop, std::function<void()>([w = o->weak_from_this()] {
          if (auto p = w.lock()) get().schedule(p, std::nullopt);
        }));
    push([this, o] { step(o); });
  }

  // Queues a step of `o`, for its wait `seq` (any when empty: a stop).
  void schedule(const std::shared_ptr<op>& o, std::optional<std::uint64_t> seq) {
    {
      std::lock_guard g(o->m);
      if (o->finished || (seq && *seq != o->seq)) return;
      if (o->running) {
        o->again = true;
        return;
      }
      if (o->queued) return;
      o->queued = true;
    }
    push([this, o] { step(o); });
  }

  void push(std::function<void()> fn) {
    std::lock_guard g(m_);
    ready_.push_back(std::move(fn));
    wake_one();
  }

  std::uint64_t watch(int fd, short events, std::function<void(short)> ready) {
    std::lock_guard g(m_);
    const auto id = next_watch_++;
    watches_.emplace(id, descriptor{fd, events, std::move(ready)});
    if (polling_)
      wake_poller();  // its set lacks this one
    else if (sleepers_ > 0)
      cv_.notify_one();  // to poll
    return id;
  }

  void unwatch(std::uint64_t id) {
    // The poller may be polling its descriptor still: it finds the watch gone when it returns.
    std::function<void(short)> gone;  // destroyed outside the lock
    std::lock_guard g(m_);
    auto it = watches_.find(id);
    if (it == watches_.end()) return;
    gone = std::move(it->second.ready);
    watches_.erase(it);
  }

 private:
  // A wait of an acquisition that ends at `t`, or a task to run then (run_in_background).
  struct timer {
    steady_time t;
    std::uint64_t seq;
    std::weak_ptr<op> o;
    std::function<void()> task;
    bool operator>(const timer& x) const { return t > x.t; }
  };

  void at(steady_time t, const std::shared_ptr<op>& o, std::uint64_t seq) { add({t, seq, o, {}}); }

 public:
  void at(steady_time t, std::function<void()> task) { add({t, 0, {}, std::move(task)}); }

 private:
  // A watched descriptor.
  struct descriptor {
    int fd;
    short events;
    std::function<void(short)> ready;
  };

  void add(timer t) {
    std::lock_guard g(m_);
    const bool earliest = timers_.empty() || t.t < timers_.top().t;
    timers_.push(std::move(t));
    if (!earliest) return;
    if (polling_) wake_poller();  // its time-out may be later
    if (sleepers_ > 0) cv_.notify_one();
  }

  // Under m_: hands new work to a thread waiting on the condition variable, or else to the one
  // in poll(2).
  void wake_one() {
    if (sleepers_ > 0)
      cv_.notify_one();
    else if (polling_)
      wake_poller();
  }

  // Under m_.
  void wake_poller() {
    if (poller_woken_) return;
    poller_woken_ = true;
    const std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
  }

  // Whether this thread should poll the watches now (under m_): nobody else does, and it has
  // no `work` to do (a task, a timer due) or the last poll is too long ago.
  bool poll_due(steady_time now, bool work) const {
    if (watches_.empty() || polling_) return false;
    return !work || now - last_poll_ >= poll_at_least_every;
  }

  // Polls the watches (lk held on entry and exit): until one fires, a wake-up or the next
  // timer, or not at all when there is `work` waiting. The ones that fired become tasks.
  void poll_watches(std::unique_lock<std::mutex>& lk, steady_time now, bool work) {
    std::vector<pollfd> fds{{wake_fd_, POLLIN, 0}};
    std::vector<std::uint64_t> ids;
    for (const auto& [id, d] : watches_) {
      fds.push_back({d.fd, d.events, 0});
      ids.push_back(id);
    }
    int timeout = -1;
    if (work)
      timeout = 0;
    else if (!timers_.empty())
      timeout = static_cast<int>(std::max<std::int64_t>(
          0, std::chrono::ceil<std::chrono::milliseconds>(timers_.top().t - now).count()));
    polling_ = true;
    lk.unlock();
    const int rc = ::poll(fds.data(), fds.size(), timeout);
    lk.lock();
    polling_ = false;
    last_poll_ = clock::now();
    if (std::exchange(poller_woken_, false)) {
      std::uint64_t n;
      [[maybe_unused]] auto r = ::read(wake_fd_, &n, sizeof n);
    }
    for (std::size_t i = 1; rc > 0 && i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      auto it = watches_.find(ids[i - 1]);
      if (it == watches_.end()) continue;  // removed meanwhile
      ready_.push_back([ready = std::move(it->second.ready), revents = fds[i].revents] {
        run_task([&] { ready(revents); });
      });
      watches_.erase(it);
    }
    // The poller's place is free: a thread waiting on the condition variable takes it (or the
    // tasks just made).
    if (sleepers_ > 0) cv_.notify_one();
  }

  void loop() {
    std::unique_lock lk(m_);
    bool timers_last = false;  // with both timers due and ready steps, take turns
    for (;;) {
      const auto now = clock::now();
      const bool timer_due = !timers_.empty() && timers_.top().t <= now;
      if (poll_due(now, timer_due || !ready_.empty())) {
        poll_watches(lk, now, timer_due || !ready_.empty());
      } else if (timer_due && (ready_.empty() || !timers_last)) {
        timers_last = true;
        auto t = timers_.top();
        timers_.pop();
        lk.unlock();
        if (t.task)
          run_task(t.task);
        else if (auto p = t.o.lock())
          schedule(p, t.seq);
        lk.lock();
      } else if (!ready_.empty()) {
        timers_last = false;
        auto fn = std::move(ready_.front());
        ready_.pop_front();
        lk.unlock();
        fn();
        lk.lock();
      } else if (timers_.empty()) {
        ++sleepers_;
        cv_.wait(lk);
        --sleepers_;
      } else {
        // A copy: the wait lets go of m_, and another thread's push or pop may move the heap's
        // elements (wait_until reads its time point again after each wake-up).
        const steady_time next = timers_.top().t;
        ++sleepers_;
        cv_.wait_until(lk, next);
        --sleepers_;
      }
    }
  }

  void step(const std::shared_ptr<op>& o) {
    std::uint64_t seq;
    {
      std::lock_guard g(o->m);
      o->queued = false;
      o->running = true;
      o->again = false;
      seq = ++o->seq;
    }
    if (std::exchange(o->armed, false)) o->a->disarm();
    auto next = advance(*o, seq);
    if (!next) return;  // finished
    at(*next, o, seq);
    std::lock_guard g(o->m);
    o->running = false;
    if (o->again) {
      o->again = false;
      o->queued = true;
      push([this, o] { step(o); });
    }
  }

  // One step of `o` (the rules of acquire_steps, as the blocking loop follows them) and when
  // to look again (empty: it ended).
  std::optional<steady_time> advance(op& o, std::uint64_t seq) {
    acquire_next next;
    try {
      next = o.steps.attempt();
    } catch (...) {
      finish(o, std::current_exception(), std::nullopt);
      return std::nullopt;
    }
    switch (next.what) {
      case acquire_next::kind::held:
        finish(o, nullptr, std::move(next.hold));
        return std::nullopt;
      case acquire_next::kind::ended:
        finish(o, nullptr, std::nullopt);
        return std::nullopt;
      case acquire_next::kind::failed:
        finish(o, next.failure, std::nullopt);
        return std::nullopt;
      case acquire_next::kind::retry:
        return next.until;
      case acquire_next::kind::wait:
        break;
    }
    auto wake = [w = o.weak_from_this(), seq] {
      if (auto p = w.lock()) get().schedule(p, seq);
    };
    if (auto t = o.a->arm(next.until, std::move(wake))) {
      o.armed = true;
      return std::min(*t, next.until);
    }
    return o.steps.backoff_until(next.until);
  }

  // Ends `o`: an acquisition without a hold is cancelled first (cancel_then: the backend may
  // combine the removals of many requests ending at once, or answer on a thread of its own),
  // then its caller is told, on a driver thread.
  void finish(op& o, std::exception_ptr e, std::optional<lease_info> l) {
    {
      std::lock_guard g(o.m);
      o.finished = true;
    }
    o.on_stop.reset();  // waits for a stop callback running now (it takes no lock of ours)
    if (std::exchange(o.armed, false)) o.a->disarm();
    auto self = o.shared_from_this();  // the step's own reference keeps it until it returns
    if (!l) {
      o.a->cancel_then([this, self, e = std::move(e)]() mutable {
        push([this, self, e = std::move(e)]() mutable {
          complete(self, std::move(e), std::nullopt);
        });
      });
      return;
    }
    complete(self, std::move(e), std::move(l));
  }

  template <class Task>
  static void run_task(const Task& task) {
    try {
      task();
    } catch (...) {
      // A background task's failure must not stop a driver thread.
    }
  }

  // Tells the caller of `o` how it ended, its acquisition destroyed first (a completion may
  // close the client whose backend it refers to).
  void complete(const std::shared_ptr<op>& o, std::exception_ptr e, std::optional<lease_info> l) {
    o->a.reset();
    auto done = std::move(o->done);
    {
      std::lock_guard g(m_);
      live_.erase(o);
    }
    try {
      done(std::move(e), std::move(l));
    } catch (...) {
      // A completion's failure must not stop a driver thread (the core's never throw).
    }
  }

  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> ready_;
  std::priority_queue<timer, std::vector<timer>, std::greater<>> timers_;
  std::unordered_set<std::shared_ptr<op>> live_;  // every acquisition not ended yet
  std::map<std::uint64_t, descriptor> watches_;   // by id, in the order they were made
  std::uint64_t next_watch_ = 1;
  int wake_fd_ = -1;                  // an eventfd: wakes the thread in poll(2); never closed
  bool polling_ = false;              // a thread is in poll(2) for the watches
  bool poller_woken_ = false;         // wake_fd_ written since that poll began
  unsigned sleepers_ = 0;             // threads waiting on cv_
  steady_time last_poll_{};           // when the last poll returned
  std::vector<std::thread> threads_;  // never joined: the engine lives as long as the process
};

}  // namespace

unsigned async_driver::thread_count() {
  return std::clamp(std::thread::hardware_concurrency(), 2u, max_threads);
}

void async_driver::start(std::unique_ptr<acquisition> a, lock_request req, steady_time deadline,
                         wait_policy policy, acquired_fn done) {
  engine::get().start(std::make_shared<op>(std::move(a), std::move(req), deadline,
                                           std::move(policy), std::move(done)));
}

void async_driver::post(std::function<void()> fn) {
  engine::get().push(std::move(fn));
}

}  // namespace sqlock::detail

namespace sqlock {

void run_in_background(steady_time when, std::function<void()> task) {
  detail::engine::get().at(when, std::move(task));
}

descriptor_watch watch_descriptor(int fd, short events, std::function<void(short revents)> ready) {
  return descriptor_watch(detail::engine::get().watch(fd, events, std::move(ready)));
}

descriptor_watch::~descriptor_watch() {
  reset();
}

descriptor_watch::descriptor_watch(descriptor_watch&& o) noexcept : id_(std::exchange(o.id_, 0)) {}

descriptor_watch& descriptor_watch::operator=(descriptor_watch&& o) noexcept {
  if (this != &o) {
    reset();
    id_ = std::exchange(o.id_, 0);
  }
  return *this;
}

void descriptor_watch::reset() noexcept {
  if (id_ != 0) detail::engine::get().unwatch(std::exchange(id_, 0));
}

bool task_gate::run(const std::function<void()>& fn) {
  const auto self = std::this_thread::get_id();
  {
    std::lock_guard g(m_);
    if (closed_) return false;
    inside_.push_back(self);
  }
  struct leave {
    task_gate& gate;
    std::thread::id self;
    ~leave() {
      {
        std::lock_guard g(gate.m_);
        gate.inside_.erase(std::find(gate.inside_.begin(), gate.inside_.end(), self));
      }
      gate.left_.notify_all();
    }
  } on_return{*this, self};
  fn();
  return true;
}

void task_gate::close() {
  const auto self = std::this_thread::get_id();
  std::unique_lock lk(m_);
  closed_ = true;
  left_.wait(lk, [&] {
    return std::all_of(inside_.begin(), inside_.end(), [&](auto id) { return id == self; });
  });
}

bool task_gate::closed() const {
  std::lock_guard g(m_);
  return closed_;
}

}  // namespace sqlock
