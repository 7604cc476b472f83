// A hold_recorder batch as the JSON array the advisory_record routines read:
// [{name, owner, fence, pid, age_ms, holder}, ...]. Header-only: included by the backends that
// link nlohmann-json (PostgreSQL, MySQL), so that the SQL engine itself needs no JSON library.
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

}  // namespace sqlock::sql
