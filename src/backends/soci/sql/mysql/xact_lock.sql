-- Transaction-scoped lock (SOCI backend), run by sqlock::soci::try_lock_xact() inside the
-- caller's open transaction on the schema of migrations/mysql/. The lock is InnoDB's exclusive
-- row lock on the name's row of sqlock_locks, held until the caller's COMMIT or ROLLBACK.
-- Needs SELECT, INSERT, UPDATE on sqlock_locks and EXECUTE on sqlock_key/sqlock_now. The row
-- is always written free (owner ''), so once committed the name is free again for every mode;
-- the fence counter is not touched (it would serialize every acquire until the caller
-- commits): the transaction itself fences the writes made under this lock. Statements:
--   1. does the row exist (plain read: no gap lock, which would deadlock two first inserts)?
--   2-4. no row: insert it, waiting at most 1 s for a concurrent insert of the same name by
--      another open transaction (lock wait timeout = busy; once that transaction committed, a
--      duplicate = go on with 5); the session's innodb_lock_wait_timeout is restored after;
--   5. lock the row without waiting (a row locked by another transaction is an error = busy);
--      returns whether a live lease-based hold owns it (busy: the attempt stops);
--   6. free or expired: mark it claimed by this transaction.
SELECT 1 FROM sqlock_locks WHERE name_key = sqlock_key(:name);
SET @sqlock_saved_wait = @@SESSION.innodb_lock_wait_timeout, SESSION innodb_lock_wait_timeout = 1;
INSERT INTO sqlock_locks (name_key, name, owner, fence, version, acquired_at, expires_at, mode,
                          holder)
VALUES (sqlock_key(:name), :name, '', 0, 0, sqlock_now(), sqlock_now(), 'xact',
        LEFT(:holder, 255));
SET SESSION innodb_lock_wait_timeout = @sqlock_saved_wait;
SELECT owner <> '' AND expires_at > sqlock_now() AS busy
  FROM sqlock_locks WHERE name_key = sqlock_key(:name) FOR UPDATE NOWAIT;
UPDATE sqlock_locks
   SET owner = '', version = version + 1, acquired_at = sqlock_now(), expires_at = sqlock_now(),
       mode = 'xact', holder = LEFT(:holder, 255)
 WHERE name_key = sqlock_key(:name);
