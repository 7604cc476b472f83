-- Release: delete the hold only when ARGV[1] owns it and wake waiters.
-- KEYS: owner key, fence key, info key. ARGV: owner, channel, fence floor (Redlock: the
-- counter of this node is raised to at least the fence of the hold, so that nodes which lagged
-- behind do not hand out smaller tokens later; 0 = nothing to raise).
-- Returns 1 when released, 0 when ARGV[1] did not hold it.
local floor = tonumber(ARGV[3]) or 0
if floor > 0 and (tonumber(redis.call('GET', KEYS[2]) or '0') or 0) < floor then
  redis.call('SET', KEYS[2], floor)
end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1], KEYS[3])
redis.call('PUBLISH', ARGV[2], '1')
return 1
