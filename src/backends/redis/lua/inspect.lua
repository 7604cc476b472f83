-- One row of list(): the hold of a lock as the server sees it, with the server's clock.
-- KEYS: owner key, fence key, info key. Returns {owner, pttl, fence, holder, acquired ms,
-- server now ms}; owner is '' when the lock is not held.
local owner = redis.call('GET', KEYS[1])
if not owner then
  return {'', '0', '0', '', '0', '0'}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local info = redis.call('HMGET', KEYS[3], 'fence', 'holder', 'acquired')
local fence = info[1] or redis.call('GET', KEYS[2]) or '0'
return {owner, tostring(redis.call('PTTL', KEYS[1])), tostring(fence), info[2] or '',
        tostring(info[3] or '0'), string.format('%d', now)}
