-- Renew a shared or permit hold: extend our unexpired row on the database's clock; 1 = renewed,
-- 0 = lost. Other holders of the name are not touched.
UPDATE sqlock_holders SET expires_ms = sqlock_now_ms() + :lease_ms
 WHERE name = :name AND owner = :owner
   AND boot_id = sqlock_boot_id() AND expires_ms > sqlock_now_ms();
SELECT changes();
