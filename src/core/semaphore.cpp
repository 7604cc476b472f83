// sqlock::semaphore: each permit a hold of kind permit, of its own (hold.cpp).
#include "sqlock/semaphore.hpp"

#include "hold_maker.hpp"

namespace sqlock {

semaphore client::make_semaphore(std::string name, std::uint32_t permits, lock_options opts) const {
  detail::check_options(name, opts);
  if (permits == 0) throw config_error("semaphore '" + name + "' needs at least one permit");
  return semaphore(impl_, std::move(name), permits, opts);
}

semaphore::semaphore(std::shared_ptr<detail::client_impl> c, std::string name,
                     std::uint32_t permits, lock_options opts)
    : client_(std::move(c)), name_(std::move(name)), permits_(permits), opts_(opts) {}

permit semaphore::acquire(std::stop_token stop) {
  return take(steady_time::max(), true, stop);
}
permit semaphore::try_acquire() {
  return take(std::chrono::steady_clock::now(), false, {});
}
permit semaphore::try_acquire_until_steady(steady_time deadline, std::stop_token stop) {
  return take(deadline, true, stop);
}

permit semaphore::take(steady_time deadline, bool wait, const std::stop_token& stop) {
  return detail::hold_maker::take(client_, name_, opts_,
                                  {.kind = lock_kind::permit, .permits = permits_, .stop = stop},
                                  deadline, wait);
}

}  // namespace sqlock

namespace sqlock::detail {

hold_maker::target hold_maker::of(const semaphore& s) {
  return {s.client_, s.name_, s.opts_, {.kind = lock_kind::permit, .permits = s.permits_}};
}

}  // namespace sqlock::detail
