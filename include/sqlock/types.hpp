// The vocabulary a user of sqlock sees: the kinds of lock, a lock as a store lists it, an entry
// of a store's audit trail, what a backend can do, its connection counts and the waiting policy
// of a client. client.hpp includes it; the backend-author API (sqlock/backend/) builds on it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "sqlock/export.hpp"

namespace sqlock {

using std::chrono::milliseconds;
using steady_time = std::chrono::steady_clock::time_point;

/// What a request asks for. Every kind's holds carry their own owner, lease and fence; the fence
/// of an exclusive hold exceeds the fence of every earlier hold of the name, of any kind.
enum class lock_kind : std::uint8_t {
  exclusive,  ///< the name alone (a mutex)
  shared,     ///< one of any number of shared holders; excludes and is excluded by exclusive
              ///< holds; a waiting exclusive request keeps new shared holders out
  permit,     ///< one of `permits` holders of the name (a counting semaphore)
};

/// "exclusive", "shared" or "permit".
SQLOCK_API const char* to_string(lock_kind k) noexcept;

/// One row of a store's list: a lock as the backend sees it.
struct lock_status {
  std::string name;         ///< lock name, verbatim
  std::string owner;        ///< owner token of the holder
  std::uint64_t fence = 0;  ///< fencing token of the hold
  std::string acquired_at;  ///< server time, ISO-8601 UTC ("" when unknown)
  std::string expires_at;   ///< server time, ISO-8601 UTC ("" when bound to a session)
  std::string mode;         ///< backend mode: pessimistic, optimistic, advisory, ...
  std::string holder;       ///< holder description given at acquire ("" when unknown)
  lock_kind kind = lock_kind::exclusive;  ///< what the hold is
  std::uint32_t permits = 0;              ///< kind permit: the name's number of permits
};

/// A request that waits for a lock (client::waiting()): what the store can tell of it.
struct waiting_request {
  std::string name;    ///< lock name, verbatim
  std::string owner;   ///< owner token of the waiting request ("" when unknown)
  std::string holder;  ///< holder description the request was made with ("" when unknown)
  lock_kind kind = lock_kind::exclusive;  ///< what it asks for
  std::uint32_t permits = 0;              ///< kind permit: the name's number of permits
  std::string since;           ///< server time it started waiting, ISO-8601 UTC ("" when unknown)
  std::uint32_t position = 0;  ///< its place among the name's waiters, 1 = next in line (0 when
                               ///< the store keeps no order)
};

/// One entry of a store's audit trail (events()).
struct lock_event {
  std::string at;           ///< server time, ISO-8601 UTC
  std::string event;        ///< acquire, release, force_release, sweep, ...
  std::string name;         ///< lock name ("" for events of no one name)
  std::string owner;        ///< owner token of the hold concerned ("" when none)
  std::uint64_t fence = 0;  ///< fence of the hold concerned (0 when none)
  std::string mode;         ///< backend mode of the hold
  std::string holder;       ///< holder description of the hold
  std::string actor;        ///< the database user that caused it
  std::string detail;       ///< free text ("" when none)
};

/// What a backend can do. Every flag defaults to false: a backend claims only what it says.
/// The last six are not declared by the backend but follow from what it implements
/// (capabilities_of() fills them in; client::caps() is that): `list` when it has a store admin,
/// `force_release`, `events`, `sweep` and `waiting` when that admin has the call, `schema` when it
/// owns a schema. A backend's own caps() leaves them false.
struct capabilities {
  bool fencing = false;          ///< fence tokens strictly rise across holders of a name
  bool fencing_safe = false;     ///< tokens stay monotonic across server failover
  bool notify = false;           ///< waits end early when the server tells of a release
  bool fair = false;             ///< waiters are served in arrival order
  bool session_bound = false;    ///< the hold dies with the connection/session, not by lease
  bool holder_text = false;      ///< the store keeps each hold's holder text (list() shows it; an
                                 ///< election's leader value); false in a peer's layout with no
                                 ///< room for it (Redis compat=plain)
  bool listed_as_taken = false;  ///< list() shows each hold under the name it was taken with
                                 ///< and with its owner token; false in a peer's layout that
                                 ///< stores neither (PostgreSQL and MySQL compat=distributedlock
                                 ///< and raw: list() shows the server's own record, a key or a
                                 ///< GET_LOCK name decoded where the encoding reverses, and the
                                 ///< holding session)
  bool cross_process = false;    ///< two processes exclude each other (false for memory:)
  bool shared = false;           ///< lock_kind::shared works (else try_acquire throws unsupported)
  bool permits = false;          ///< lock_kind::permit works (else try_acquire throws unsupported)
  bool linger = false;           ///< renew() may shorten a lease, and a hold left unreleased
                                 ///< stays until its lease ends even after its holder is gone
                                 ///< (run_exclusive's at_least); false when holds die with
                                 ///< their session
  bool force_release = false;    ///< follows from the backend: its admin has a breaker()
  bool sweep = false;            ///< follows from the backend: its admin has a sweeper()
  bool events = false;           ///< follows from the backend: its admin has an audit()
  bool waiting = false;          ///< follows from the backend: its admin has a waiters()
  bool list = false;             ///< follows from the backend: it has a store admin (list())
  bool schema = false;           ///< follows from the backend: it owns a schema (migrate())
};

/// The connections one backend object made to its store (backend::connections()).
struct connection_stats {
  std::uint64_t opened = 0;  ///< connections made since the backend was created
  std::size_t open = 0;      ///< connections open now
  std::size_t peak = 0;      ///< most connections open at once
};

/// How a client waits for a busy lock: capped exponential backoff with full jitter between
/// attempts, bounded re-checks where the store tells of releases.
struct wait_policy {
  milliseconds initial{2};            ///< first delay between attempts
  milliseconds cap{100};              ///< longest delay between attempts without notification
  milliseconds notify_recheck{1000};  ///< re-check interval when the backend can notify
  milliseconds retry_cap{1000};       ///< longest delay before retrying a failed connection
  milliseconds retry_for{30000};      ///< longest a waiter retries a store that does not
                                      ///< answer (then connection_error); the deadline ends
                                      ///< it sooner
  milliseconds min_attempt{250};      ///< time one attempt may always take, even past the
                                      ///< caller's deadline (try_lock(), try_lock_for(1ms))
  std::function<void(std::string_view name, std::string_view error)>
      on_retry{};  ///< told of each retried connection error (null: a client sets it for its
                   ///< observer)
};

}  // namespace sqlock
