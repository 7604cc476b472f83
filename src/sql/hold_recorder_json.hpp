// A hold_recorder batch as the JSON array the advisory_record routines read:
// [{name, owner, fence, pid, age_ms, holder}, ...], and a batch of waiting requests as the JSON
// object the record_waits routines read (dialect::encode_waits). Header-only: included by the
// backends that link nlohmann-json (PostgreSQL, MySQL), so that the SQL engine itself needs no
// JSON library.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "hold_recorder.hpp"

namespace sqlock::sql {

inline std::string to_json(const std::vector<hold_recorder::record>& batch) {
  auto a = nlohmann::json::array();
  for (const auto& r : batch)
    a.push_back({{"name", r.name},
                 {"owner", r.owner},
                 {"fence", r.fence},
                 {"pid", r.pid},
                 {"age_ms", r.age_ms},
                 {"holder", r.holder}});
  return a.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

/// [{name, owner}, ...]
inline nlohmann::json pairs_to_json(const std::vector<std::pair<std::string, std::string>>& pairs) {
  auto a = nlohmann::json::array();
  for (const auto& [name, owner] : pairs) a.push_back({{"name", name}, {"owner", owner}});
  return a;
}

/// Writer marks to remove (dialect::encode_marks): [{name, owner}, ...]
inline std::string marks_to_json(const std::vector<std::pair<std::string, std::string>>& marks) {
  return pairs_to_json(marks).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

/// {"waiting": [{name, owner, holder, kind, permits, age_ms}, ...], "ended": [{name, owner}]}
inline std::string waits_to_json(const hold_recorder::batch& b) {
  auto waiting = nlohmann::json::array();
  for (const auto& r : b.records)
    waiting.push_back({{"name", r.name},
                       {"owner", r.owner},
                       {"holder", r.holder},
                       {"kind", to_string(r.kind)},
                       {"permits", r.permits},
                       {"age_ms", r.age_ms}});
  return nlohmann::json{{"waiting", std::move(waiting)}, {"ended", pairs_to_json(b.ended)}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace sqlock::sql
