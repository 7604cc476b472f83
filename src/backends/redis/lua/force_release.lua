-- Administrative release regardless of owner; wakes waiters.
-- KEYS: owner key, info key. ARGV: channel. Returns 1 when a hold was deleted, 0 otherwise.
local held = redis.call('EXISTS', KEYS[1])
if held == 0 then
  return 0
end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('PUBLISH', ARGV[1], '1')
return 1
