// The GET_LOCK names of the peers' layouts on MySQL/MariaDB (compat=distributedlock,
// compat=raw): a lock name turned into the exact GET_LOCK name the peer takes.
#pragma once

#include <string>
#include <string_view>

namespace sqlock::mysql::detail {

/// The GET_LOCK name DistributedLock.MySql takes for `name` (MySqlDistributedLock.GetSafeName):
/// the name itself when it is 1..64 characters with no upper-case letter; else its lower-cased
/// start followed by 32 base32 characters of its SHA-512 (64 characters at most; "__empty__"
/// for the empty name). config_error for a name with non-ASCII characters, whose lower-casing
/// (.NET's ToLowerInvariant) this library does not reproduce: give the peer's exact name with
/// compat=raw instead.
std::string distributedlock_get_lock_name(std::string_view name);

/// compat=raw: the name is the GET_LOCK name, as DistributedLock's exactName takes it (1..64
/// characters); config_error otherwise.
std::string raw_get_lock_name(std::string_view name);

}  // namespace sqlock::mysql::detail
