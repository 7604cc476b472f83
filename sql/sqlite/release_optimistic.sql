-- Owner-checked release that keeps the row and moves its version on.
UPDATE sqlock_locks SET owner = '', version = version + 1, expires_ms = 0, holder = ''
 WHERE name = :name AND owner = :owner;
SELECT changes();
