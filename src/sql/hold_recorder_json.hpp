// A hold_recorder batch as the JSON array the advisory_record routines read:
// [{name, owner, fence, pid, age_ms, holder}, ...], and a batch of waiting requests as the JSON
// object the record_waits routines read (dialect::encode_waits). Header-only: included by the
// backends that link nlohmann-json (PostgreSQL, MySQL), so that the SQL engine itself needs no
// JSON library.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
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
  auto ended = nlohmann::json::array();
  for (const auto& [name, owner] : b.ended) ended.push_back({{"name", name}, {"owner", owner}});
  return nlohmann::json{{"waiting", std::move(waiting)}, {"ended", std::move(ended)}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace sqlock::sql
