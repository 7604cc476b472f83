// What `sqlock serve` learns of each hold's lease across its readings of the store: no store
// keeps a hold's lease, only when it ends, so the lease is taken as the most ever left at one
// reading. A hold renewed on the default schedule (every third of its lease) always has more
// than two thirds of it left; "expiring soon" is less than half of it left, i.e. a renewal
// overdue, whatever the lease (the page's red, sqlock_store_holds_expiring_soon).
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common.hpp"

namespace sqlock::cli {

class lease_tracker {
 public:
  /// Records `rows` read at `now`; returns each row's lease as seen so far, in seconds
  /// (nullopt when the hold ends with its session or its expiry is unknown).
  std::vector<std::optional<double>> observe(const std::vector<lock_status>& rows, wall_time now);

  /// Whether a hold with `left_s` seconds left of a lease seen as `lease_s` is due to expire:
  /// less than half of it left (a renewal overdue), or none.
  static bool expiring_soon(double left_s, double lease_s) {
    return left_s <= 0 || left_s < lease_s / 2;
  }

 private:
  struct seen {
    double lease_s = 0;
    wall_time last{};
  };
  std::mutex m_;
  std::unordered_map<std::string, seen> holds_;  // by name '\0' owner
  wall_time pruned_{};
};

}  // namespace sqlock::cli
