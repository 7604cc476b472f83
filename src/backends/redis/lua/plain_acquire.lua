-- compat=plain acquire: the peers' layout, one string key per lock holding the owner's token
-- (redis-py Lock, redsync, node-redlock, DistributedLock.Redis all take it with
-- SET key token NX PX lease). Idempotent for the owner: a retry after a lost reply finds its own
-- hold and sets its lease again.
-- KEYS: the lock's key. ARGV: owner token, lease ms.
-- Returns {1, 0} when ARGV[1] holds it; {0, ms} when another token does (ms = its PTTL).
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, 0}
end
if v then return {0, redis.call('PTTL', KEYS[1])} end
redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
return {1, 0}
