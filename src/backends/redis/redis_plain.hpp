// compat=plain: the Redis lock layout of the peers (redis-py Lock, redsync, node-redlock,
// DistributedLock.Redis), on one server or Redlock over several masters. Internal.
#pragma once

#include <memory>

#include "sqlock/backend.hpp"
#include "sqlock/redis/redis.hpp"

namespace sqlock::redis::detail {

/// A store in the peers' layout over `o`'s servers (options already checked).
std::shared_ptr<backend> open_plain(const options& o);

}  // namespace sqlock::redis::detail
