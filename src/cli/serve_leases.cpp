// lease_tracker: the lease of each hold as `sqlock serve` has seen it (serve_leases.hpp).
#include "serve_leases.hpp"

namespace sqlock::cli {
namespace {
// A hold not seen for this long is forgotten (released, or filtered out of every reading).
constexpr std::chrono::minutes forget_after{10};
}  // namespace

std::vector<std::optional<double>> lease_tracker::observe(const std::vector<lock_status>& rows,
                                                          wall_time now) {
  std::vector<std::optional<double>> out;
  out.reserve(rows.size());
  std::lock_guard g(m_);
  for (const auto& r : rows) {
    auto expires = parse_utc(r.expires_at);
    if (!expires) {
      out.emplace_back();
      continue;
    }
    double left = std::chrono::duration<double>(*expires - now).count();
    auto& s = holds_[r.name + '\0' + r.owner];
    s.lease_s = std::max(s.lease_s, left);
    s.last = now;
    out.emplace_back(s.lease_s);
  }
  if (now - pruned_ > forget_after) {
    std::erase_if(holds_, [&](const auto& kv) { return now - kv.second.last > forget_after; });
    pruned_ = now;
  }
  return out;
}

}  // namespace sqlock::cli
