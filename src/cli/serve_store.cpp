#include "serve_store.hpp"

#include <algorithm>
#include <cctype>

#include "common.hpp"

namespace sqlock::cli {

namespace {
double seconds_between(wall_time a, wall_time b) {
  return std::chrono::duration<double>(b - a).count();
}
bool digit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}
}  // namespace

nlohmann::json fence_parts(const std::string& backend_kind, std::uint64_t fence) {
  if (backend_kind == "postgresql")
    return {{"epoch", fence >> 44}, {"counter", fence & ((std::uint64_t{1} << 44) - 1)}};
  if (backend_kind == "zookeeper")
    return {{"epoch", fence >> 32}, {"counter", fence & 0xffffffffu}};
  if (backend_kind == "etcd") return {{"revision", fence}};
  return nullptr;
}

nlohmann::json locks_json(const std::vector<lock_status>& rows, wall_time now,
                          lease_tracker& leases, const std::string& backend_kind) {
  auto arr = nlohmann::json::parse(status_json(rows, -1));
  auto lease = leases.observe(rows, now);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    auto acquired = parse_utc(rows[i].acquired_at);
    auto expires = parse_utc(rows[i].expires_at);
    auto& row = arr[i];
    row["age_s"] = acquired ? nlohmann::json(seconds_between(*acquired, now)) : nullptr;
    double left = expires ? seconds_between(now, *expires) : 0;
    row["expires_in_s"] = expires ? nlohmann::json(left) : nullptr;
    row["lease_s"] = lease[i] ? nlohmann::json(*lease[i]) : nullptr;
    row["expiring_soon"] = lease[i] && lease_tracker::expiring_soon(left, *lease[i]);
    row["fence_parts"] = fence_parts(backend_kind, rows[i].fence);
  }
  return arr;
}

void add_waiting_counts(nlohmann::json& rows,
                        const std::optional<std::vector<waiting_request>>& waiters) {
  std::map<std::string, std::uint64_t> count;
  if (waiters)
    for (const auto& w : *waiters) ++count[w.name];
  for (auto& row : rows) {
    if (!waiters) {
      row["waiting"] = nullptr;
      continue;
    }
    auto it = count.find(row["name"].get<std::string>());
    row["waiting"] = it == count.end() ? 0 : it->second;
  }
}

nlohmann::json waiting_rows_json(std::vector<waiting_request> rows, wall_time now) {
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    if (int c = natural_compare(a.name, b.name)) return c < 0;
    return a.position < b.position;
  });
  auto arr = nlohmann::json::parse(waiting_json(rows, -1));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    auto since = parse_utc(rows[i].since);
    arr[i]["waited_s"] = since ? nlohmann::json(seconds_between(*since, now)) : nullptr;
  }
  return arr;
}

int natural_compare(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      auto si = i, sj = j;
      while (si < a.size() && a[si] == '0') ++si;
      while (sj < b.size() && b[sj] == '0') ++sj;
      auto ei = si, ej = sj;
      while (ei < a.size() && digit(a[ei])) ++ei;
      while (ej < b.size() && digit(b[ej])) ++ej;
      if (ei - si != ej - sj) return ei - si < ej - sj ? -1 : 1;
      if (int c = a.compare(si, ei - si, b, sj, ej - sj)) return c < 0 ? -1 : 1;
      i = ei;
      j = ej;
    } else {
      if (a[i] != b[j])
        return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]) ? -1 : 1;
      ++i;
      ++j;
    }
  }
  return (i < a.size()) - (j < b.size());
}

void sort_rows(nlohmann::json& rows, const std::string& key, int dir) {
  const std::string k = !rows.empty() && rows[0].contains(key) ? key : "name";
  auto order = [&](const nlohmann::json& x, const nlohmann::json& y) {
    if (x.is_null() || y.is_null()) return int(x.is_null()) - int(y.is_null());  // nulls last
    if (x.is_number() && y.is_number()) {
      if (x.is_number_unsigned() && y.is_number_unsigned())
        return x.get<std::uint64_t>() < y.get<std::uint64_t>()   ? -dir
               : y.get<std::uint64_t>() < x.get<std::uint64_t>() ? dir
                                                                 : 0;
      double a = x.get<double>(), b = y.get<double>();
      return a < b ? -dir : b < a ? dir : 0;
    }
    if (x.is_string() && y.is_string())
      return natural_compare(x.get<std::string>(), y.get<std::string>()) * dir;
    return 0;
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const auto& x, const auto& y) {
    if (int c = order(x[k], y[k])) return c < 0;
    return k != "name" && natural_compare(x["name"].template get<std::string>(),
                                          y["name"].template get<std::string>()) < 0;
  });
}

store_summary summarise(const std::vector<lock_status>& rows, wall_time now,
                        lease_tracker& leases) {
  store_summary s;
  auto lease = leases.observe(rows, now);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    s.held_by_mode[{r.mode, to_string(r.kind)}]++;
    if (auto a = parse_utc(r.acquired_at))
      s.oldest_age_s = std::max(s.oldest_age_s, seconds_between(*a, now));
    if (auto e = parse_utc(r.expires_at);
        e && lease[i] && lease_tracker::expiring_soon(seconds_between(now, *e), *lease[i]))
      s.expiring++;
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
    return why.empty() ? "store did not answer" : shown(why);
  }
}

}  // namespace sqlock::cli
