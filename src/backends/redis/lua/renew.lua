-- Renew: set the lease of ARGV[1]'s hold, exclusive or shared/permit, to ARGV[2] ms from now
-- (longer or shorter), only while ARGV[1] still holds it.
-- KEYS: owner, info, holders, hinfo, meta. ARGV: owner, lease ms. Returns 1 when set, 0 when
-- not held.
local lease = tonumber(ARGV[2])
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], lease)
  redis.call('PEXPIRE', KEYS[2], lease)
  return 1
end
local expiry = redis.call('ZSCORE', KEYS[3], ARGV[1])
if not expiry then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if tonumber(expiry) <= now then return 0 end
redis.call('ZADD', KEYS[3], now + lease, ARGV[1])
for i = 3, 5 do
  local p = redis.call('PTTL', KEYS[i])
  if p == -1 or (p >= 0 and p < lease) then redis.call('PEXPIRE', KEYS[i], lease) end
end
return 1
