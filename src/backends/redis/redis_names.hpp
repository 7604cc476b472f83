// The check every lock name passes before the Redis backend sends it, the keys of a lock
// beyond those of sqlock/redis/redis.hpp, and the lock a SCAN key belongs to (see
// redis_names.cpp). Internal.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sqlock::redis::detail {

/// Throws config_error for an empty, over-long (> 4096 bytes) or invalid-UTF-8 name.
void check_lock_name(std::string_view name);

/// The shared and permit holders of a lock: a sorted set, owner -> expiry (server ms).
std::string holders_key(std::string_view prefix, std::string_view name);
/// What each shared or permit holder gave: a hash, owner -> {fence, holder, acquired} JSON.
std::string hinfo_key(std::string_view prefix, std::string_view name);
/// The kind and permits of the live shared/permit holders and the waiting writer's mark.
std::string meta_key(std::string_view prefix, std::string_view name);

/// A lock found by the SCAN: its name, and whether the key was its exclusive hold (owner) or its
/// shared/permit holders.
struct found {
  std::string name;
  bool exclusive;
};

/// The lock a key of ours belongs to, if it is an owner or holders key whose name is escaped as
/// encode_name() escapes it; `head` is "<prefix>:{".
std::optional<found> lock_of(const std::string& key, const std::string& head);

}  // namespace sqlock::redis::detail
