// Row-based holds: the engine's operations, with the wait state told when each attempt starts;
// renewals of many holds in one statement.
#include "row_backend.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "sqlock/errors.hpp"

namespace sqlock::postgres {

namespace {

// Holds renewed by one statement at most: a bounded statement size and server time per call.
constexpr std::size_t renew_chunk = 500;

}  // namespace

row_backend::row_backend(const std::string& conninfo, const std::string& shown, const options& o,
                         sql::dialect d)
    : pg_backend(conninfo, shown, o, std::move(d)),
      // sqlock.renew() of each hold in one statement: one round trip and one transaction for
      // the lot, with the routine a DBA granted (no routine of its own, so no schema version).
      renew_many_{"pg_renew_many",
                  {"SELECT (h->>'i')::integer FROM jsonb_array_elements(CAST(:holds AS jsonb)) h "
                   "WHERE " +
                   o.schema + ".renew(h->>'n', h->>'o', (h->>'l')::bigint)"}} {}

std::optional<lease_info> row_backend::one_attempt(const lock_request& req, steady_time deadline,
                                                   pg_acquisition* w) {
  if (w && !w->first_attempt()) {
    try {
      if (!register_waiter(*w, req, deadline,
                           [this](const sql::operation& op, const sql::params& p, steady_time d) {
                             run(op, p, d);  // the engine's pool
                           }))
        return std::nullopt;
    } catch (const sql::pool_busy&) {
      return std::nullopt;  // no connection came free in time: busy, as the engine counts it
    }
  }
  return attempt(req, deadline, w);
}

void row_backend::renew_all(std::vector<renewal>& batch) noexcept {
  if (batch.size() == 1) return backend::renew_all(batch);  // the plain routine call
  for (std::size_t from = 0; from < batch.size(); from += renew_chunk) {
    const std::size_t to = std::min(batch.size(), from + renew_chunk);
    auto holds = nlohmann::json::array();
    steady_time deadline = steady_time::max();
    for (std::size_t i = from; i < to; ++i) {
      const auto& r = batch[i];
      holds.push_back({{"i", i},
                       {"n", r.lease->name},
                       {"o", r.lease->owner},
                       {"l", static_cast<std::int64_t>(r.duration.count())}});
      deadline = std::min(deadline, r.deadline);
    }
    const auto sent = std::chrono::steady_clock::now();
    for (std::size_t i = from; i < to; ++i) {
      batch[i].sent = sent;
      batch[i].result = renewal::outcome::gone;  // unless the statement names it
    }
    try {
      sql::params p;
      p.holds = holds.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      for (const auto& row : run(renew_many_, p, deadline)) {
        auto i = static_cast<std::size_t>(
            sql::decode_u64(row.empty() ? std::nullopt : row[0], "index of a renewed hold"));
        if (i >= from && i < to) batch[i].result = renewal::outcome::renewed;
      }
    } catch (const read_only_error&) {
      // The server turned read-only: none of them can be kept there (each stays gone).
    } catch (const std::exception& ex) {
      for (std::size_t i = from; i < to; ++i) {
        batch[i].result = renewal::outcome::unknown;
        batch[i].error = ex.what();
      }
    }
  }
}

}  // namespace sqlock::postgres
