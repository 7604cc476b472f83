-- Renew: extend our unexpired hold on the database's clock; 1 = renewed, 0 = lost.
UPDATE sqlock_locks SET expires_ms = sqlock_now_ms() + :lease_ms
 WHERE name = :name AND owner = :owner
   AND boot_id = sqlock_boot_id() AND expires_ms > sqlock_now_ms();
SELECT changes();
