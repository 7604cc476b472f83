-- Transaction-scoped lock (SOCI backend), run by sqlock::soci::try_lock_xact() inside the
-- caller's open transaction on the schema of migrations/sqlite/. Two statements:
--   1. busy check: 1 when a live lease-based hold owns the name (the attempt stops: waiting
--      inside the transaction would keep that holder from ever releasing);
--   2. claim: writes the name's lock row in the caller's transaction. Writing takes SQLite's
--      database write lock, which no other connection can get until the caller's COMMIT or
--      ROLLBACK: that is the lock. The row is written free (owner '') with its version moved
--      on, so once committed the name is free again for every mode, and a rollback leaves
--      nothing behind. The fence counter is not touched: the transaction itself fences the
--      writes made under this lock (they commit together with it or not at all).
SELECT EXISTS (SELECT 1 FROM sqlock_locks
                WHERE name = :name AND owner <> ''
                  AND boot_id = sqlock_boot_id() AND expires_ms > sqlock_now_ms());
INSERT INTO sqlock_locks (name, owner, fence, version, boot_id, acquired_ms, expires_ms,
                          acquired_at, mode, holder)
SELECT :name, '', c.value, 0, sqlock_boot_id(), sqlock_now_ms(), sqlock_now_ms(),
       strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'xact', :holder
  FROM sqlock_counters c WHERE c.name = 'fence'
    ON CONFLICT (name) DO UPDATE
   SET owner = '', version = sqlock_locks.version + 1, boot_id = excluded.boot_id,
       acquired_ms = excluded.acquired_ms, expires_ms = excluded.expires_ms,
       acquired_at = excluded.acquired_at, mode = 'xact', holder = excluded.holder
 WHERE NOT (sqlock_locks.owner <> '' AND sqlock_locks.boot_id = sqlock_boot_id()
            AND sqlock_locks.expires_ms > sqlock_now_ms());
