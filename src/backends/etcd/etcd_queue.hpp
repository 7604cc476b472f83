// The lock queue of one name in etcd, as etcd's concurrency.Mutex keeps it: every contender's
// key `<prefix>/<encoded name>/<lease id hex>` is attached to its own lease; the key with the
// lowest create revision holds the lock; an exclusive waiter watches only the key created just
// before its own. Shared requests and permits queue in the same way (etcd_kinds.hpp says who
// holds). Also the administrative reads (list, force release). A waiter learns of deletions from
// the client's deletion watch (etcd_wait.hpp).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "etcd_connection.hpp"
#include "etcd_kinds.hpp"
#include "etcd_lease_reserve.hpp"
#include "etcd_wait.hpp"

namespace sqlock::etcd::detail {

/// One key in the queue, ours.
struct hold {
  std::string key;            ///< full key
  std::int64_t lease = 0;     ///< its lease
  std::int64_t revision = 0;  ///< its create revision: the fence
  std::int64_t ttl_s = 0;     ///< the lease's TTL as granted, in seconds
};

/// A hold just obtained.
struct taken {
  hold h;            ///< the key
  steady_time sent;  ///< when the request that last extended its lease was sent
  bool waited = false;
};

class queue {
 public:
  /// The queues under `prefix`; waiters learn of deletions from `deletions`.
  queue(gateway& gw, std::string prefix, deletion_watch& deletions);

  /// etcd's TryLock: holds the lock (or a shared hold, a permit) now or leaves no key behind. A
  /// retried call with the same owner finds the key its lost reply created.
  std::optional<taken> try_take(const lock_request& req, steady_time deadline);
  class waiter;
  /// Keeps the lease of `h` alive once; false when the lease is gone.
  bool keep_alive(const hold& h, steady_time deadline);
  /// True while the key of `h` exists with its create revision.
  bool still_holds(const hold& h, steady_time deadline);
  /// still_holds() of each of `holds`, in one transaction of range reads per 100 of them.
  std::vector<bool> still_hold(const std::vector<hold>& holds, steady_time deadline);
  /// Deletes the key of `h` (false when it was already gone) and keeps its lease, last extended
  /// by a request sent at `refreshed`, as a reserved lease while it is young.
  bool give_up(const hold& h, steady_time refreshed, steady_time deadline);
  /// The key `owner` holds or waits with under `name` (for a release without a handle).
  std::optional<hold> find_owner(const std::string& name, const std::string& owner,
                                 steady_time deadline);
  /// Every holder (a shared lock's readers, a semaphore's permits) of every name starting with
  /// `name_prefix`.
  std::vector<lock_status> list(std::string_view name_prefix, steady_time deadline);
  /// The keys of every name starting with `name_prefix` that do not hold yet, in queue order.
  std::vector<waiting_request> waiting(std::string_view name_prefix, steady_time deadline);
  /// Deletes every holder's key of `name` (their leases stay: one may carry other locks of an
  /// etcdctl session); false when nobody held it.
  bool delete_holder(const std::string& name, steady_time deadline);
  /// Checks that a member answers.
  void ping(steady_time deadline);

 private:
  static std::int64_t ttl_for(milliseconds lease);
  // Each name's queue under `name_prefix` (by encoded name), in create-revision order.
  std::map<std::string, std::vector<queue_key>> queues_of(std::string_view name_prefix,
                                                          steady_time deadline);
  // Sends `txn`, which may put a key on reserved lease lease `lease`; when its outcome is unknown
  // (it throws) the lease, and any key put with it, is revoked in the background.
  json put_txn(const json& txn, std::int64_t lease, steady_time deadline);
  // try_take() for a shared request or a permit.
  std::optional<taken> try_take_kind(const lock_request& req, steady_time deadline);
  // What a waiting key saw in one read at revision `at`: it holds, or the keys whose deletion
  // (after `at`) it waits for. `head`: the one key watched is the queue's first, so its deletion
  // makes ours the first; `all`: they are every key before ours, so once all are deleted ours
  // is the first. Otherwise a deletion calls for another read.
  struct look {
    bool holds = false;
    std::vector<std::string> watch;
    bool head = false;
    bool all = false;
    std::int64_t at = 0;
  };
  look look_exclusive(const std::string& pfx, const hold& h, const std::string& name,
                      steady_time deadline);
  look look_kind(const std::string& pfx, const hold& h, const std::string& name,
                 steady_time deadline);
  // An exclusive key's look from a read at revision `at` of it and its predecessor (newest
  // first) and of the queue's first keys up to it (`start`: a range response); lock_lost when
  // the key is gone.
  static look look_from(const json& ours_and_pred, const json& start, const hold& h,
                        const std::string& name, std::int64_t at);
  void revoke_quietly(std::int64_t lease, steady_time deadline);
  gateway& gw_;
  std::string prefix_;  // "<prefix>"
  deletion_watch& watch_;
  lease_reserve reserve_;
};

/// etcd's Lock, one step at a time (the backend's acquisition drives it): the first attempt
/// queues a key, later ones read where it stands (keeping the waiting key's lease alive);
/// wait() watches the keys it waits for through the client's deletion watch. Fair: keys hold in
/// the order they were put. cancel() removes the key (revokes its lease).
class queue::waiter {
 public:
  /// For `req` on `q` (which outlives it); `policy.min_attempt` bounds the put.
  waiter(queue& q, lock_request req);
  waiter(const waiter&) = delete;
  waiter& operator=(const waiter&) = delete;

  /// Queues the key (first call) or reads where it stands; the hold when it is first. Throws
  /// lock_lost when the waiting key's lease died, config_error for a permit count that
  /// disagrees with a permit key ahead, connection_error when the outcome is unknown (a key put
  /// by then is revoked: the next attempt queues again).
  std::optional<taken> attempt(steady_time deadline);
  /// Until a key it waits for is deleted, its next keep-alive is due, `until` or a stop.
  void wait(steady_time until, const std::stop_token& stop);
  /// The non-blocking form of wait() (acquisition::arm): when to attempt again if the deletion
  /// watch does not call `wake` first (once, from its reader thread or the restarter): now
  /// when a key it waits for went already, else at the next keep-alive or `until`.
  std::optional<steady_time> arm(steady_time until, std::function<void()> wake);
  /// Drops the wake-up of arm().
  void disarm() noexcept;
  /// Leaves the queue: revokes the waiting key's lease.
  void cancel() noexcept;
  /// The request.
  const lock_request& request() const noexcept { return req_; }

 private:
  // Puts the key and reads the queue ahead of it in one transaction.
  std::optional<taken> join(steady_time deadline);
  // With gone_.m held: key `k` was deleted after the last read.
  bool deleted_since_read(const std::string& k) const;
  // With gone_.m held: what the last read said to wait for went.
  bool moved() const;
  // With gone_.m held, after a wait: first_ when deletions made ours the first, known_ when
  // nothing moved (the next attempt needs no read).
  void settle();

  queue& q_;
  lock_request req_;
  std::string pfx_;
  bool exclusive_;
  deletions gone_;
  std::optional<deletion_watch::subscription> subscribed_;
  std::optional<hold> h_;  // the waiting key, once put
  steady_time sent_{};     // when its lease was last extended
  milliseconds keepalive_every_{};
  steady_time next_keepalive_{};
  confirmation watch_at_{};    // the watch stream the wait relies on
  std::optional<look> known_;  // where the key stands, still true (no read needed)
  look last_{};                // what the last attempt saw
  bool first_ = false;         // deletions showed that no key precedes ours any more
  bool armed_ = false;         // arm() handed gone_ a wake-up since the last attempt
};

}  // namespace sqlock::etcd::detail
