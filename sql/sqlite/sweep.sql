-- Deletes up to :limit expired or free rows; returns how many.
DELETE FROM sqlock_locks
 WHERE name IN (SELECT name FROM sqlock_locks
                 WHERE owner = '' OR boot_id <> sqlock_boot_id() OR expires_ms <= sqlock_now_ms()
                 LIMIT :limit);
SELECT changes();
