-- The end of an exclusive acquire() that gave up: drop its writer mark, if it is still the
-- mark, and wake the shared requests it kept out.
-- KEYS: meta. ARGV: owner, channel. Returns 1 when the mark was dropped.
if redis.call('HGET', KEYS[1], 'writer') ~= ARGV[1] then return 0 end
redis.call('HDEL', KEYS[1], 'writer', 'writer_until')
redis.call('PUBLISH', ARGV[2], '1')
return 1
