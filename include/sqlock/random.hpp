// Randomness and identity used by the core and the backends: owner tokens from the operating
// system's CSPRNG (getrandom(2)), jitter for backoff, the default holder description and the
// default actor of a forced release.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "sqlock/export.hpp"

namespace sqlock {

/// 128 random bits from the OS CSPRNG as 32 lower-case hex digits. Throws error on failure.
SQLOCK_API std::string random_token();

/// A uniformly distributed value in [0, bound) from a per-thread generator seeded by the CSPRNG
/// (for jitter only, never for tokens). bound 0 gives 0.
SQLOCK_API std::uint64_t jitter(std::uint64_t bound);

/// Full-jitter exponential backoff: a random delay in [0, min(cap, initial * 2^attempt)],
/// at least 1 ms.
SQLOCK_API std::chrono::milliseconds backoff_delay(unsigned attempt,
                                                   std::chrono::milliseconds initial,
                                                   std::chrono::milliseconds cap);

/// "host:pid:program" of this process.
SQLOCK_API std::string default_holder();

/// "user@host" of this process: who a forced release names when the caller names no one
/// (client::force_release(name)). The user is $USER, else the effective user's login name, else
/// "uid<N>"; the host is gethostname(2)'s. Cut to 200 bytes, control characters dropped.
SQLOCK_API std::string default_actor();

}  // namespace sqlock
