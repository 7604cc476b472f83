#include "serve_store.hpp"

#include "common.hpp"

namespace sqlock::cli {

namespace {
double seconds_between(wall_time a, wall_time b) {
  return std::chrono::duration<double>(b - a).count();
}
}  // namespace

nlohmann::json locks_json(const std::vector<lock_status>& rows, wall_time now) {
  auto arr = nlohmann::json::parse(status_json(rows, -1));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    auto acquired = parse_utc(rows[i].acquired_at);
    auto expires = parse_utc(rows[i].expires_at);
    arr[i]["age_s"] = acquired ? nlohmann::json(seconds_between(*acquired, now)) : nullptr;
    arr[i]["expires_in_s"] = expires ? nlohmann::json(seconds_between(now, *expires)) : nullptr;
  }
  return arr;
}

store_summary summarise(const std::vector<lock_status>& rows, wall_time now,
                        std::chrono::milliseconds renewal_interval) {
  store_summary s;
  for (const auto& r : rows) {
    s.held_by_mode[{r.mode, to_string(r.kind)}]++;
    if (auto a = parse_utc(r.acquired_at))
      s.oldest_age_s = std::max(s.oldest_age_s, seconds_between(*a, now));
    if (auto e = parse_utc(r.expires_at); e && *e - now <= renewal_interval) s.expiring++;
  }
  return s;
}

std::string probe_store(const client& c) {
  try {
    // A prefix no lock is expected to have: the store answers with (almost) nothing.
    if (c.caps().list) c.list("\x7fsqlock-healthz");
    return {};
  } catch (const std::exception& e) {
    std::string why = e.what();
    return why.empty() ? "store did not answer" : why;
  }
}

}  // namespace sqlock::cli
