// The in-process backend: `memory:` (the process-wide store) or `memory:NAME` (a named store).
// Clients of one store exclude each other; leases run on steady_clock; waiters are woken by a
// condition variable. It answers every lock kind (exclusive, shared with writer preference,
// permits). It also lets tests inject faults (a store that is "down", renewals
// that fail) so the core's loss handling can be tested without a server.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "sqlock/backend.hpp"
#include "sqlock/export.hpp"

namespace sqlock::memory {

/// Faults a test can switch on; shared by every client of the store.
struct faults {
  std::atomic<bool> down{false};           ///< every call throws connection_error
  std::atomic<bool> renew_refused{false};  ///< renew() reports the hold gone
  std::atomic<bool> hang{false};           ///< try_acquire()/renew() block until cleared
};

/// The store named `name` ("" = process-wide default); created on first use.
SQLOCK_API std::shared_ptr<backend> open(const std::string& name = {});

/// Fault switches of the store named `name`.
SQLOCK_API faults& faults_of(const std::string& name = {});

/// Ends every hold of `lock` in store `store_name` as if the holder's session died: the name is
/// free at once and the holder's client is told through its loss listener (like a
/// session-bound backend's watcher). false when `lock` was not held.
SQLOCK_API bool end_session(const std::string& store_name, const std::string& lock);

}  // namespace sqlock::memory
