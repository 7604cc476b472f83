-- Renew: extend the lease only when ARGV[1] still owns the lock.
-- KEYS: owner key, info key. ARGV: owner, lease ms. Returns 1 when extended, 0 when not held.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1
