-- Acquire: SET owner NX PX lease and raise the fence counter in the same atomic step.
-- KEYS: owner key, fence key, info key (one hash tag). ARGV: owner, lease ms, holder.
-- Returns {1, fence} when held by ARGV[1] (new or already: idempotent), {0, pttl} when busy
-- (pttl: milliseconds until the other hold expires, so a waiter knows when to look again).
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local fence = redis.call('INCR', KEYS[2])
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('HSET', KEYS[3], 'fence', fence, 'holder', ARGV[3], 'acquired', now)
  redis.call('PEXPIRE', KEYS[3], ARGV[2])
  return {1, fence}
end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return {0, redis.call('PTTL', KEYS[1])}
end
-- A retried acquire of the same owner: keep the hold, refresh the lease, same fence.
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[3], ARGV[2])
local fence = tonumber(redis.call('HGET', KEYS[3], 'fence') or redis.call('GET', KEYS[2]) or '0')
return {1, fence}
