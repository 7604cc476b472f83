// run_exclusive(): one hold per run; at_most as an unrenewed, expiry-watched lease, at_least
// as a shortened lease left on the server (client_impl::leave()).
#include "sqlock/run_exclusive.hpp"

#include "hold_maker.hpp"

namespace sqlock {

using clock = std::chrono::steady_clock;

bool run_exclusive(const client& c, const std::string& name, const run_options& o,
                   const std::function<void(hold& h)>& job) {
  if (o.at_least.count() < 0 || o.at_most.count() < 0 || o.wait.count() < 0)
    throw config_error("run_exclusive '" + name + "': durations must be >= 0");
  if (o.at_most.count() > 0 && o.at_least > o.at_most)
    throw config_error("run_exclusive '" + name + "': at_least must not exceed at_most");
  if (!job) throw config_error("run_exclusive '" + name + "' needs a job");
  const auto& impl = detail::hold_maker::impl(c);
  if (o.at_least.count() > 0 && !impl->b().caps().linger) {
    auto m = impl->b().mode();
    throw unsupported(impl->b().kind() + (m.empty() ? "" : " (" + m + ")") +
                      " cannot keep a lock after its holder leaves (holds die with the "
                      "session), so run_exclusive's at_least cannot work there");
  }
  const bool bounded = o.at_most.count() > 0;
  lock_options lo{.lease = bounded ? o.at_most : o.lease, .auto_renew = !bounded};
  detail::check_options(name, lo);
  const auto start = clock::now();
  steady_time deadline = start + std::min(o.wait, milliseconds(std::chrono::hours(24 * 365)));
  if (o.wait == milliseconds::max()) deadline = steady_time::max();
  hold h = detail::hold_maker::take(impl, name, lo, {.watch_expiry = bounded, .stop = o.stop},
                                    deadline, o.wait.count() > 0);
  if (!h) return false;
  const auto core = detail::hold_maker::core(h);  // the job may move `h`: the core stays
  const steady_time sent = core->lease().sent;
  auto linger = [&] {
    auto left = std::chrono::ceil<milliseconds>(sent + o.at_least - clock::now());
    if (o.at_least.count() > 0 && left.count() > 0 && !core->lost())
      core->leave(left);
    else
      core->release();
  };
  try {
    job(h);
  } catch (...) {
    linger();
    throw;
  }
  linger();
  return true;
}

}  // namespace sqlock
