// list() of the Redis backend on one server: the locks whose name starts with a prefix, each
// exclusive hold and each shared or permit holder, with the server's clock.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "redis_connection.hpp"
#include "sqlock/backend.hpp"

namespace sqlock::redis::detail {

/// The holds under `key_prefix` (the store's key prefix) of every lock whose name starts with
/// `name_prefix`, on the server of `nd`: one SCAN over the locks' keys, then one pipelined
/// inspect script per lock. `mode` fills lock_status::mode.
std::vector<lock_status> list_node(node& nd, const std::string& key_prefix,
                                   std::string_view name_prefix, const std::string& mode,
                                   steady_time deadline);

}  // namespace sqlock::redis::detail
