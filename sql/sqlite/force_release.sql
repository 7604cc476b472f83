-- Administrative release of a name whoever holds it; 1 = a hold was removed. A live hold's
-- release is written to sqlock_events with :actor, who forced it.
INSERT INTO sqlock_events (at, event, name, owner, fence, mode, holder, actor)
SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'force_release', name, owner, fence, mode, holder,
       :actor
  FROM sqlock_locks
 WHERE name = :name AND owner <> '' AND boot_id = sqlock_boot_id()
   AND expires_ms > sqlock_now_ms();
DELETE FROM sqlock_locks WHERE name = :name AND owner <> '';
SELECT changes();
