-- The end of both exclusive acquires (appended to acquire_pessimistic.sql and
-- acquire_optimistic.sql by the dialect, in the same transaction).
-- Busy and inside a waiting acquire() call (:mark_ms > 0): leave our writer mark, or move our
-- own on, unless another waiting writer's live mark is there. Acquired: remove our mark.
INSERT INTO sqlock_writer_marks (name, owner, boot_id, expires_ms)
SELECT :name, :owner, sqlock_boot_id(), sqlock_now_ms() + :mark_ms
 WHERE :mark_ms > 0
   AND NOT EXISTS (SELECT 1 FROM sqlock_locks WHERE name = :name AND owner = :owner)
    ON CONFLICT (name) DO UPDATE
   SET owner = excluded.owner, boot_id = excluded.boot_id, expires_ms = excluded.expires_ms
 WHERE owner = excluded.owner OR boot_id <> sqlock_boot_id() OR expires_ms <= sqlock_now_ms();
DELETE FROM sqlock_writer_marks
 WHERE name = :name AND owner = :owner
   AND EXISTS (SELECT 1 FROM sqlock_locks WHERE name = :name AND owner = :owner);
UPDATE sqlock_counters
   SET value = (SELECT fence FROM sqlock_locks WHERE name = :name AND owner = :owner)
 WHERE name = 'fence'
   AND value < (SELECT fence FROM sqlock_locks WHERE name = :name AND owner = :owner);
SELECT fence FROM sqlock_locks WHERE name = :name AND owner = :owner;
