-- 1 when :fence is the token of a current, unexpired hold of :name (the exclusive hold or one
-- of its shared or permit holds).
SELECT EXISTS (SELECT 1 FROM sqlock_locks
                WHERE name = :name AND fence = :fence AND owner <> ''
                  AND boot_id = sqlock_boot_id() AND expires_ms > sqlock_now_ms())
    OR EXISTS (SELECT 1 FROM sqlock_holders
                WHERE name = :name AND fence = :fence
                  AND boot_id = sqlock_boot_id() AND expires_ms > sqlock_now_ms());
