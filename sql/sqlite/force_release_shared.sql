-- Administrative release of every shared or permit hold of a name, and of a writer's mark;
-- 1 = a hold was removed. (force_release.sql removes the exclusive hold.) Each live hold's
-- release is written to sqlock_events with :actor, who forced it.
INSERT INTO sqlock_events (at, event, name, owner, fence, mode, holder, actor)
SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'force_release', name, owner, fence, mode, holder,
       :actor
  FROM sqlock_holders
 WHERE name = :name AND boot_id = sqlock_boot_id() AND expires_ms > sqlock_now_ms();
DELETE FROM sqlock_writer_marks WHERE name = :name;
DELETE FROM sqlock_holders WHERE name = :name;
SELECT changes() > 0;
