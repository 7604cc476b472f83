// The check every lock name passes before the Redis backend sends it (see redis_names.cpp).
#pragma once

#include <string_view>

namespace sqlock::redis::detail {

/// Throws config_error for an empty, over-long (> 4096 bytes) or invalid-UTF-8 name.
void check_lock_name(std::string_view name);

}  // namespace sqlock::redis::detail
