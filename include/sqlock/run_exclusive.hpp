// run_exclusive(): a scheduled job that runs on one machine per period, with ShedLock's
// meaning of `at_least` and `at_most`. The job runs only if the lock is free (by default one
// attempt: a busy lock means another machine runs it now). `at_most` bounds the hold: the
// lease is `at_most` and is never renewed, and the job is told through the hold's loss signal
// when the bound comes (it should stop). `at_least` keeps the lock after a job that ends
// early: the lease is shortened to what is left of `at_least`, measured from when the
// acquiring request was sent, and left on the server unreleased, so a slightly late cron on
// another machine finds it held and skips that period. `at_least` needs a backend whose holds
// outlive their holder (caps().linger); elsewhere it is unsupported.
#pragma once

#include <chrono>
#include <functional>
#include <stop_token>
#include <string>
#include <type_traits>

#include "sqlock/client.hpp"
#include "sqlock/hold.hpp"

namespace sqlock {

/// How run_exclusive() holds its lock (an aggregate: use designated initialisers).
struct run_options {
  milliseconds at_least{0};   ///< keep the lock this long after acquiring even if the job ends
                              ///< sooner; 0 = release when the job returns
  milliseconds at_most{0};    ///< the hold's lease, never renewed: the job is told (loss
                              ///< signal) when it ends; 0 = renew `lease` while the job runs
  milliseconds wait{0};       ///< how long to wait for the lock; 0 = one attempt,
                              ///< milliseconds::max() = until obtained
  milliseconds lease{30000};  ///< the renewed lease when `at_most` is 0 (> 0)
  std::stop_token stop{};     ///< ends the wait for the lock: run_exclusive() throws
                              ///< interrupted (the job does not run)
};

/// Runs `job(h)` (h: the job's hold: its fence, lost(), on_lost()) if the lock `name` is
/// obtained; returns whether the job ran. config_error for bad options (at_least > at_most,
/// negative durations), unsupported for `at_least` on a backend without caps().linger.
/// Whatever the job throws is rethrown after the lock is handled as above.
SQLOCK_API bool run_exclusive(const client& c, const std::string& name, const run_options& o,
                              const std::function<void(hold& h)>& job);

/// The same for a job that takes no arguments.
template <class F>
requires std::is_invocable_v<F&> &&
    (!std::is_invocable_v<F&, hold&>)bool run_exclusive(const client& c, const std::string& name,
                                                        const run_options& o, F&& job) {
  return run_exclusive(c, name, o, std::function<void(hold&)>([&job](hold&) { job(); }));
}

}  // namespace sqlock
