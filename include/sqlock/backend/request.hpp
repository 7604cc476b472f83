// What crosses the seam between sqlock's core and a backend for one hold: the request, the hold
// a backend granted, and one hold of a batch renewal. Part of the backend-author API.
#pragma once

#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>

#include "sqlock/types.hpp"

namespace sqlock {

/// What one acquisition asks for.
struct lock_request {
  std::string name;      ///< any non-empty UTF-8 (or binary) string, stored verbatim
  std::string owner;     ///< 128-bit CSPRNG token in hex, new for every acquisition
  milliseconds lease{};  ///< server-side expiry, measured on the server's clock (> 0)
  std::string holder;    ///< free text describing the holder: "host:pid:program"
  lock_kind kind = lock_kind::exclusive;  ///< what is asked for
  std::uint32_t permits = 0;  ///< kind permit: how many holders the name admits (>= 1; every
                              ///< user of the name must give the same, else config_error);
                              ///< 0 for the other kinds
  std::stop_token stop{};     ///< a requested stop ends a waiting acquisition as its deadline
                              ///< would (empty result, nothing held, the waiter's node, key or
                              ///< registration removed), promptly: every wait of it wakes on
                              ///< it; a default token never stops
};

/// A hold the backend granted.
struct lease_info {
  std::string name;             ///< the lock name
  std::string owner;            ///< the owner token used to acquire
  std::uint64_t fence = 0;      ///< fencing token: strictly rises across holders of a name
  std::shared_ptr<void> state;  ///< backend-private (session handle, node path, ...); may be null
  bool waited = false;          ///< the acquisition had to wait for it (contention statistics)
  steady_time sent{};           ///< when the lease began, on steady_clock (epoch = not known:
                                ///< the core then sets when the winning request was sent). A
                                ///< backend whose request may wait in the server before the
                                ///< grant sets it: to when the answer arrived for a hold that
                                ///< has no lease on the server (session-bound), never later
                                ///< than the server started a lease it keeps
  lock_kind kind = lock_kind::exclusive;  ///< what the request asked for (set by the core): a
                                          ///< backend releases by it a hold it has no state of
};

/// One hold of a batch renewal (backend::renew_all) and, once it returns, what came of it.
struct renewal {
  /// What a renewal found.
  enum class outcome {
    unknown,  ///< not answered or failed (`error` says why): the core tries again in the lease
    renewed,  ///< extended by `duration` from `sent`
    gone      ///< the hold is gone (expired and taken, forced, session died)
  };
  const lease_info* lease = nullptr;  ///< the hold
  milliseconds duration{};            ///< the lease to extend it by
  steady_time deadline{};             ///< an answer after this is moot (the lease has ended)
  steady_time sent{};                 ///< set by renew_all(): when its request was sent
  outcome result = outcome::unknown;  ///< set by renew_all()
  std::string error;                  ///< set by renew_all() when the result is unknown
};

}  // namespace sqlock
