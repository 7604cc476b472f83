// Spare etcd leases, granted ahead of need: an acquisition then costs one write (the txn that
// puts its key) instead of two, and a busy try_lock gives its unused lease back instead of
// revoking it. A spare is used only while young (a quarter of its TTL); its age counts against
// the hold, because the hold's lease is measured from when the spare's grant was sent.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "gateway.hpp"

namespace sqlock::etcd::detail {

/// A granted lease with no key attached.
struct spare {
  std::int64_t id = 0;     ///< lease id
  std::int64_t ttl_s = 0;  ///< TTL as granted
  steady_time sent{};      ///< when the grant was sent: the lease runs from there
};

class spares {
 public:
  explicit spares(gateway& gw);
  ~spares();
  spares(const spares&) = delete;
  spares& operator=(const spares&) = delete;

  /// A young lease of `ttl_s` seconds: a spare, or a new grant made now (by `deadline`). When
  /// this took the last spare of that TTL, another is granted in the background.
  spare take(std::int64_t ttl_s, steady_time deadline);
  /// Gives back a lease that no key was attached to.
  void put_back(const spare& s);
  /// Revokes a lease in the background (its keys go with it).
  void revoke_later(std::int64_t id);

 private:
  spare grant(std::int64_t ttl_s, steady_time deadline);
  void run();
  bool young(const spare& s) const;

  gateway& gw_;
  std::mutex m_;
  std::condition_variable cv_;
  static constexpr std::size_t max_per_ttl = 4;       // spares kept per TTL
  std::map<std::int64_t, std::vector<spare>> ready_;  // by TTL, newest last
  std::set<std::int64_t> wanted_;                     // TTLs to grant a spare of
  std::vector<std::int64_t> revoke_;                  // leases to revoke
  bool stop_ = false;
  std::thread th_;
};

}  // namespace sqlock::etcd::detail
