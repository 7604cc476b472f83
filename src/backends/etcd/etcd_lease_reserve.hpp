// Leases granted ahead of need, kept in reserve with no key attached: an acquisition then costs one
// write (the txn that puts its key) instead of two, and a busy try_lock gives its unused lease back
// instead of revoking it. A reserved lease is used only while young (a quarter of its TTL); its age
// counts against the hold, because the hold's lease is measured from when the reserved lease's
// grant was sent.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "etcd_connection.hpp"

namespace sqlock::etcd::detail {

/// A granted lease with no key attached.
struct reserved_lease {
  std::int64_t id = 0;     ///< lease id
  std::int64_t ttl_s = 0;  ///< TTL as granted
  steady_time sent{};      ///< when the grant was sent: the lease runs from there
};

class lease_reserve {
 public:
  explicit lease_reserve(gateway& gw);
  ~lease_reserve();
  lease_reserve(const lease_reserve&) = delete;
  lease_reserve& operator=(const lease_reserve&) = delete;

  /// A young lease of `ttl_s` seconds: a reserved lease, or a new grant made now (by `deadline`).
  /// When this took the last reserved lease of that TTL, another is granted in the background.
  reserved_lease take(std::int64_t ttl_s, steady_time deadline);
  /// Gives back a lease that no key was attached to.
  void put_back(const reserved_lease& s);
  /// Revokes a lease in the background (its keys go with it).
  void revoke_later(std::int64_t id);

 private:
  reserved_lease grant(std::int64_t ttl_s, steady_time deadline);
  void run();
  bool young(const reserved_lease& s) const;

  gateway& gw_;
  std::mutex m_;
  std::condition_variable cv_;
  static constexpr std::size_t max_per_ttl = 4;                // reserved leases kept per TTL
  std::map<std::int64_t, std::vector<reserved_lease>> ready_;  // by TTL, newest last
  std::set<std::int64_t> wanted_;                              // TTLs to grant a reserved lease of
  std::vector<std::int64_t> revoke_;                           // leases to revoke
  bool stop_ = false;
  std::thread th_;
};

}  // namespace sqlock::etcd::detail
