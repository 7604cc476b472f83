-- Release: delete ARGV[1]'s hold (exclusive, shared or permit) and wake waiters.
-- KEYS: owner, fence, info, holders, hinfo. ARGV: owner, channel, fence floor (Redlock: the
-- counter of this node is raised to at least the fence of the hold, so that nodes which lagged
-- behind do not hand out smaller tokens later; 0 = nothing to raise).
-- Returns 1 when released, 0 when ARGV[1] did not hold it (or its lease had run out).
local floor = tonumber(ARGV[3]) or 0
if floor > 0 and (tonumber(redis.call('GET', KEYS[2]) or '0') or 0) < floor then
  redis.call('SET', KEYS[2], floor)
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1], KEYS[3])
  redis.call('PUBLISH', ARGV[2], '1')
  return 1
end
local expiry = redis.call('ZSCORE', KEYS[4], ARGV[1])
if not expiry then return 0 end
redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('HDEL', KEYS[5], ARGV[1])
redis.call('PUBLISH', ARGV[2], '1')
local t = redis.call('TIME')
if tonumber(expiry) <= tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) then return 0 end
return 1
