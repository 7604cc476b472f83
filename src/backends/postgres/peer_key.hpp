// The advisory-lock keys of the peers' layouts (compat=distributedlock, compat=raw): a lock
// name turned into the key another library or a hand-written pg_advisory_lock call takes, and
// a key back into the name that gives it (for list()).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sqlock::postgres {

/// An advisory-lock key: one bigint (pg_advisory_lock(bigint)) or a pair of ints
/// (pg_advisory_lock(int, int)) packed as (first << 32) | (uint32)second.
struct advisory_key {
  std::int64_t value = 0;
  bool pair = false;
};

/// The key DistributedLock.Postgres takes for `name` (PostgresAdvisoryLockKey(name,
/// allowHashing)): up to 9 ASCII characters encoded 7 bits each, 16 hex digits as one bigint,
/// "XXXXXXXX,XXXXXXXX" as two ints, any other name hashed (SHA-1, first 8 bytes little-endian)
/// only when `allow_hashing`, else config_error naming the formats.
advisory_key distributedlock_key(std::string_view name, bool allow_hashing);

/// The key a name of compat=raw gives: a decimal bigint ("42", "-7") or two decimal ints
/// joined by a comma ("1,2"); config_error otherwise.
advisory_key raw_key(std::string_view name);

/// The name DistributedLock shows for `k` (PostgresAdvisoryLockKey.ToString()): the ASCII
/// name when the key is one, else 16 hex digits or "XXXXXXXX,XXXXXXXX" (which give `k` again).
std::string distributedlock_name(advisory_key k);

/// The compat=raw name of `k`: "42" or "1,2".
std::string raw_name(advisory_key k);

}  // namespace sqlock::postgres
