// The client's copy of sqlock.lock_key(name) (sql/postgresql/00_common.sql): the advisory-lock
// key of a lock name, computed once in the client so that the library's advisory pair
// (advisory_lock_key / advisory_unlock_key, schema version 9) need not hash in SQL.
#pragma once

#include <cstdint>
#include <string_view>

namespace sqlock::postgres {

/// The first 8 bytes of SHA-256(name as UTF-8), big-endian, as a signed 64-bit key: what
/// `('x' || encode(substr(sha256(convert_to(name, 'UTF8')), 1, 8), 'hex'))::bit(64)::bigint`
/// gives in SQL. The name must already be checked as UTF-8 (check_name()).
std::int64_t lock_key(std::string_view name);

}  // namespace sqlock::postgres
