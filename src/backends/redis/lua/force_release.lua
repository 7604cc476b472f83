-- Administrative release regardless of owner: the exclusive hold and every shared or permit
-- hold of the name; wakes waiters.
-- KEYS: owner, info, holders, hinfo. ARGV: channel. Returns 1 when a hold was deleted.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local held = redis.call('EXISTS', KEYS[1]) == 1 or
             #redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. now, '+inf', 'LIMIT', 0, 1) > 0
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
if not held then return 0 end
redis.call('PUBLISH', ARGV[1], '1')
return 1
