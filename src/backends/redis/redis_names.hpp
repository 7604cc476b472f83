// The check every lock name passes before the Redis backend sends it (see redis_names.cpp).
#pragma once

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

}  // namespace sqlock::redis::detail
