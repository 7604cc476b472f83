-- Optimistic acquire: the row of a name stays after release; a free or expired row is claimed
-- and its version moved on. SQLite's write lock already serializes writers, so the
-- compare-and-set cannot lose here; the server databases check the version read earlier.
-- Returns our fence (no row = busy).
INSERT INTO sqlock_locks (name, owner, fence, version, boot_id, acquired_ms, expires_ms,
                          acquired_at, mode, holder)
VALUES (:name, '', 0, 0, '', 0, 0, '', 'optimistic', '')
    ON CONFLICT (name) DO NOTHING;
UPDATE sqlock_locks
   SET owner = :owner, version = version + 1,
       fence = (SELECT value + 1 FROM sqlock_counters WHERE name = 'fence'),
       boot_id = sqlock_boot_id(), acquired_ms = sqlock_now_ms(),
       expires_ms = sqlock_now_ms() + :lease_ms,
       acquired_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), mode = 'optimistic', holder = :holder
 WHERE name = :name
   AND owner <> :owner
   AND (owner = '' OR boot_id <> sqlock_boot_id() OR expires_ms <= sqlock_now_ms());
UPDATE sqlock_counters
   SET value = (SELECT fence FROM sqlock_locks WHERE name = :name AND owner = :owner)
 WHERE name = 'fence'
   AND value < (SELECT fence FROM sqlock_locks WHERE name = :name AND owner = :owner);
SELECT fence FROM sqlock_locks WHERE name = :name AND owner = :owner;
