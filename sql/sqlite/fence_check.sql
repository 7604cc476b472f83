-- 1 when :fence is the token of the current, unexpired hold of :name.
SELECT EXISTS (SELECT 1 FROM sqlock_locks
                WHERE name = :name AND fence = :fence AND owner <> ''
                  AND boot_id = sqlock_boot_id() AND expires_ms > sqlock_now_ms());
