// The row-based lock models of PostgreSQL (pessimistic, optimistic): a hold is a row with a
// lease, kept by the stored functions through the shared engine's pooled connections. Nothing
// of a hold lives on a connection, so a killed connection loses nothing.
#pragma once

#include "pg_backend.hpp"

namespace sqlock::postgres {

/// Pessimistic or optimistic mode.
class row_backend final : public pg_backend {
 public:
  using pg_backend::pg_backend;

  std::optional<lease_info> try_acquire(const lock_request& req, steady_time deadline,
                                        wait_state* ws) override;
};

}  // namespace sqlock::postgres
