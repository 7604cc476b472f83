// The blocking acquire loop (acquire.hpp): the request's steps (acquire_steps.hpp, the rules
// the asynchronous driver follows too), its waits on the calling thread, and the cancel of an
// acquisition that ends without a hold.
#include "acquire.hpp"

#include <exception>

#include "acquire_steps.hpp"
#include "sqlock/backend/waiting.hpp"

namespace sqlock {
namespace {

// Cancels the acquisition unless disarmed (a hold was granted): whatever way the loop ends
// without one (deadline, stop, an error), nothing of it stays on the server.
struct canceller {
  acquisition& a;
  bool armed = true;
  ~canceller() {
    if (armed) a.cancel();
  }
};

}  // namespace

std::optional<lease_info> run_acquisition(acquisition& a, const lock_request& req,
                                          steady_time deadline, const wait_policy& policy) {
  canceller guard{a};
  detail::acquire_steps steps(a, req, deadline, policy);
  for (;;) {
    auto next = steps.attempt();
    switch (next.what) {
      case detail::acquire_next::kind::held:
        guard.armed = false;
        return std::move(next.hold);
      case detail::acquire_next::kind::ended:
        return std::nullopt;
      case detail::acquire_next::kind::failed:
        std::rethrow_exception(next.failure);
      case detail::acquire_next::kind::retry:
        // A stop ends the pause at once; the next step then ends the request.
        sleep_until(next.until, req.stop);
        break;
      case detail::acquire_next::kind::wait:
        // Ends early on a release where the store tells of them, at once on a stop.
        a.wait(next.until, req.stop);
        break;
    }
  }
}

std::optional<lease_info> acquire(backend& b, const lock_request& req, steady_time deadline,
                                  const wait_policy& policy) {
  auto a = b.make_acquisition(req, policy);
  return run_acquisition(*a, req, deadline, policy);
}

}  // namespace sqlock
