-- Optimistic exclusive acquire: the row of a name stays after release; a free or expired row is
-- claimed (when no live shared or permit hold is left) and its version moved on. SQLite's write
-- lock already serializes writers, so the compare-and-set cannot lose here; the server
-- databases check the version read earlier. Returns our fence (no row = busy). A busy attempt
-- made by a waiting acquire() call (:mark_ms > 0) leaves or refreshes its writer mark
-- (writer_mark.sql); acquiring removes it.
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
   AND (owner = '' OR boot_id <> sqlock_boot_id() OR expires_ms <= sqlock_now_ms())
   AND NOT EXISTS (SELECT 1 FROM sqlock_holders h
                    WHERE h.name = :name
                      AND h.boot_id = sqlock_boot_id() AND h.expires_ms > sqlock_now_ms());
