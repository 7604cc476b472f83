-- compat=plain renew: compare-and-extend, as the peers extend (redis-py Lock.extend with
-- replace_ttl, redsync Extend, node-redlock extend): the lease becomes ARGV[2] ms from now,
-- longer or shorter. KEYS: the lock's key. ARGV: owner token, lease ms. Returns 1 when set,
-- 0 when the token does not hold it.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
