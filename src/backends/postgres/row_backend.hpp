// The row-based lock models of PostgreSQL (pessimistic, optimistic): a hold is a row with a
// lease, kept by the stored functions through the shared engine's pooled connections. Nothing
// of a hold lives on a connection, so a killed connection loses nothing. Renewals of many holds
// go in one statement (renew_all).
#pragma once

#include "postgres_backend.hpp"

namespace sqlock::postgres {

/// Pessimistic or optimistic mode.
class row_backend final : public pg_backend {
 public:
  row_backend(const std::string& conninfo, const std::string& shown, const options& o,
              sql::dialect d);

  /// Registers a waiting request before its second attempt, then the engine's attempt.
  std::optional<lease_info> one_attempt(const lock_request& req, steady_time deadline,
                                        pg_acquisition* a) override;
  /// One statement per chunk of holds (sqlock.renew() of each, in one round trip).
  void renew_all(std::vector<renewal>& batch) noexcept override;

 private:
  sql::operation renew_many_;  // :holds, a JSON array of {i, n, o, l}; rows: i of each renewed
};

}  // namespace sqlock::postgres
