-- compat=plain release: compare-and-delete, as the peers release (only the token that set the
-- key may delete it). KEYS: the lock's key. ARGV: owner token. Returns 1 when deleted, else 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
