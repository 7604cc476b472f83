-- Acquire one hold of a lock, of any kind, in one atomic step:
--   exclusive  SET owner NX PX lease; refused while shared or permit holders live, and then the
--              request marks itself as the waiting writer for ARGV[6] ms, which keeps new
--              shared holders out (no writer starvation);
--   shared     refused while an exclusive hold or another request's writer mark lives;
--   permit     refused while an exclusive hold lives or ARGV[5] permits are taken.
-- Every new hold raises the name's fence counter, so an exclusive hold's fence exceeds the fence
-- of every earlier hold of the name, whatever its kind.
-- KEYS: owner, fence, info (the exclusive hold), holders (zset: owner -> expiry, server ms),
--       hinfo (hash: owner -> {fence, holder, acquired} as JSON), meta (hash: kind and permits
--       of the live holders, writer mark) - all in one hash slot.
-- ARGV: owner, lease ms, holder, kind (exclusive | shared | permit), permits, writer mark ms
--       (0: no mark - a single attempt that will not come back).
-- Returns {1, fence} when ARGV[1] holds it (new, or already: idempotent); {0, ms, marked} when
-- busy (ms until the earliest hold in the way expires, -1 when unknown; marked = 1 when a
-- writer mark was set); an error 'SQLOCK_MISMATCH ...' when the name is held as another kind or
-- with another number of permits.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local owner, lease, kind = ARGV[1], tonumber(ARGV[2]), ARGV[4]

-- Keeps `key` alive at least `ms` more (shared holds expire one by one, inside the key).
local function keep(key, ms)
  local p = redis.call('PTTL', key)
  if p == -1 or (p >= 0 and p < ms) then redis.call('PEXPIRE', key, ms) end
end

-- The shared and permit holders still alive; expired ones are dropped here.
local live = 0
if redis.call('EXISTS', KEYS[4]) == 1 then
  local expired = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now)
  for i = 1, #expired do
    redis.call('ZREM', KEYS[4], expired[i])
    redis.call('HDEL', KEYS[5], expired[i])
  end
  live = redis.call('ZCARD', KEYS[4])
end
local function earliest()
  local first = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
  if #first < 2 then return -1 end
  return math.max(0, tonumber(first[2]) - now)
end

if kind == 'exclusive' then
  if redis.call('GET', KEYS[1]) == owner then
    -- A retried acquire of the same owner: keep the hold, refresh the lease, same fence.
    redis.call('PEXPIRE', KEYS[1], lease)
    redis.call('PEXPIRE', KEYS[3], lease)
    return {1, tonumber(redis.call('HGET', KEYS[3], 'fence') or redis.call('GET', KEYS[2]) or '0')}
  end
  if live > 0 then
    local w = redis.call('HMGET', KEYS[6], 'writer', 'writer_until')
    local marked = 0
    local mark = tonumber(ARGV[6])
    if mark > 0 and (not w[1] or w[1] == owner or tonumber(w[2] or '0') <= now) then
      redis.call('HSET', KEYS[6], 'writer', owner, 'writer_until', now + mark)
      keep(KEYS[6], mark)
      marked = 1
    end
    return {0, earliest(), marked}
  end
  if not redis.call('SET', KEYS[1], owner, 'NX', 'PX', lease) then
    return {0, redis.call('PTTL', KEYS[1]), 0}
  end
  local fence = redis.call('INCR', KEYS[2])
  redis.call('HSET', KEYS[3], 'fence', fence, 'holder', ARGV[3], 'acquired', now)
  redis.call('PEXPIRE', KEYS[3], lease)
  if redis.call('HGET', KEYS[6], 'writer') == owner then
    redis.call('HDEL', KEYS[6], 'writer', 'writer_until')
  end
  return {1, fence}
end

-- shared or permit
if redis.call('EXISTS', KEYS[1]) == 1 then return {0, redis.call('PTTL', KEYS[1]), 0} end
local meta = redis.call('HMGET', KEYS[6], 'kind', 'permits', 'writer', 'writer_until')
if redis.call('ZSCORE', KEYS[4], owner) then
  -- A retried acquire of the same owner: refresh the lease, same fence.
  redis.call('ZADD', KEYS[4], now + lease, owner)
  keep(KEYS[4], lease)
  keep(KEYS[5], lease)
  keep(KEYS[6], lease)
  return {1, cjson.decode(redis.call('HGET', KEYS[5], owner)).fence}
end
if live > 0 and meta[1] and meta[1] ~= kind then
  if meta[1] == 'permit' then
    return redis.error_reply('SQLOCK_MISMATCH held as a semaphore of ' .. meta[2] .. ' permits')
  end
  return redis.error_reply('SQLOCK_MISMATCH held as a shared lock')
end
if kind == 'permit' and live > 0 and meta[2] and meta[2] ~= ARGV[5] then
  return redis.error_reply('SQLOCK_MISMATCH a semaphore of ' .. meta[2] .. ' permits, not ' ..
                           ARGV[5])
end
if kind == 'shared' and meta[3] and meta[3] ~= owner and tonumber(meta[4] or '0') > now then
  return {0, tonumber(meta[4]) - now, 0}
end
if kind == 'permit' and live >= tonumber(ARGV[5]) then return {0, earliest(), 0} end
local fence = redis.call('INCR', KEYS[2])
redis.call('ZADD', KEYS[4], now + lease, owner)
redis.call('HSET', KEYS[5], owner, cjson.encode({fence = fence, holder = ARGV[3], acquired = now}))
redis.call('HSET', KEYS[6], 'kind', kind, 'permits', ARGV[5])
keep(KEYS[4], lease)
keep(KEYS[5], lease)
keep(KEYS[6], lease)
return {1, fence}
