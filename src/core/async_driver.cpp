// The asynchronous acquire driver (async_driver.hpp): a queue of ready steps and a timer heap
// served by a few threads. One step of an acquisition makes one attempt and then arms its
// wake-up and a timer; a wake-up, the timer or a stop puts it back in the queue. A step of
// one acquisition runs on one thread at a time; wake-ups of an older wait are ignored.
#include "async_driver.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <queue>
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
    {
      std::lock_guard g(m_);
      ready_.push_back(std::move(fn));
    }
    cv_.notify_one();
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
  void add(timer t) {
    bool earliest;
    {
      std::lock_guard g(m_);
      earliest = timers_.empty() || t.t < timers_.top().t;
      timers_.push(std::move(t));
    }
    if (earliest) cv_.notify_one();
  }

  void loop() {
    std::unique_lock lk(m_);
    for (;;) {
      if (!timers_.empty() && timers_.top().t <= clock::now()) {
        auto t = timers_.top();
        timers_.pop();
        lk.unlock();
        if (t.task)
          run_task(t.task);
        else if (auto p = t.o.lock())
          schedule(p, t.seq);
        lk.lock();
      } else if (!ready_.empty()) {
        auto fn = std::move(ready_.front());
        ready_.pop_front();
        lk.unlock();
        fn();
        lk.lock();
      } else if (timers_.empty()) {
        cv_.wait(lk);
      } else {
        // A copy: the wait lets go of m_, and another thread's push or pop may move the heap's
        // elements (wait_until reads its time point again after each wake-up).
        const steady_time next = timers_.top().t;
        cv_.wait_until(lk, next);
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

  static void run_task(const std::function<void()>& task) {
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

}  // namespace sqlock
