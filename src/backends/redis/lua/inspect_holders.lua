-- The shared or permit holds of a lock for list(), with the server's clock.
-- KEYS: holders, hinfo, meta. Returns {now ms, kind, permits, then per live holder: owner,
-- expiry ms, info JSON}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local meta = redis.call('HMGET', KEYS[3], 'kind', 'permits')
local out = {string.format('%d', now), meta[1] or '', meta[2] or '0'}
local live = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf', 'WITHSCORES')
for i = 1, #live, 2 do
  out[#out + 1] = live[i]
  out[#out + 1] = live[i + 1]
  out[#out + 1] = redis.call('HGET', KEYS[2], live[i]) or '{}'
end
return out
