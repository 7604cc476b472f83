// The acquire loop: drives one acquisition (sqlock/backend/acquisition.hpp) through attempts and
// waits until a hold, the deadline or a stop, retrying attempts whose outcome was unknown. The
// one place that knows about retries, backoff, min_attempt and deadlines; it knows nothing of
// any backend.
#pragma once

#include <optional>

#include "sqlock/backend/acquisition.hpp"
#include "sqlock/backend/backend.hpp"
#include "sqlock/export.hpp"

namespace sqlock {

/// Drives `a` (made for `req`) until a hold, `deadline` or `req.stop` (then empty, as at the
/// deadline); the first attempt is made at once, each may take policy.min_attempt past the
/// deadline. Waits between busy attempts are a.wait() up to policy.notify_recheck each.
/// Connection errors are retried with backoff (policy.retry_cap) for policy.retry_for within
/// the deadline, then rethrown. Ending without a hold, it cancels `a`. Sets the hold's
/// `waited`, and `sent` unless the attempt set it.
SQLOCK_API std::optional<lease_info> run_acquisition(acquisition& a, const lock_request& req,
                                                     steady_time deadline,
                                                     const wait_policy& policy);

/// run_acquisition() over `b`'s acquisition for `req`.
SQLOCK_API std::optional<lease_info> acquire(backend& b, const lock_request& req,
                                             steady_time deadline, const wait_policy& policy);

}  // namespace sqlock
