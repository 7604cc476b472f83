-- Shared or permit acquire, both modes (:kind 'shared', or 'permit' with :permits): one row per
-- hold in sqlock_holders. Refused (no fence) while an exclusive hold of the name is live, while
-- a waiting exclusive request's mark is, and for a permit while :permits holds are live.
-- Expired holds and marks never count. Returns [our fence or NULL, status]: status is
-- 'mismatch:<kind>:<permits>' when the name's live holders are of another kind or number of
-- permits (the library's config_error: every user must agree), NULL otherwise.
-- Runs in one BEGIN IMMEDIATE transaction; idempotent for one owner.
DELETE FROM sqlock_holders
 WHERE name = :name AND owner <> :owner
   AND (boot_id <> sqlock_boot_id() OR expires_ms <= sqlock_now_ms());
DELETE FROM sqlock_writer_marks
 WHERE name = :name AND (boot_id <> sqlock_boot_id() OR expires_ms <= sqlock_now_ms());
INSERT INTO sqlock_holders (name, owner, kind, permits, fence, boot_id, acquired_ms, expires_ms,
                            acquired_at, mode, holder)
SELECT :name, :owner, :kind, :permits, c.value + 1, sqlock_boot_id(), sqlock_now_ms(),
       sqlock_now_ms() + :lease_ms, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), :mode, :holder
  FROM sqlock_counters c
 WHERE c.name = 'fence'
   AND NOT EXISTS (SELECT 1 FROM sqlock_locks l
                    WHERE l.name = :name AND l.owner <> ''
                      AND l.boot_id = sqlock_boot_id() AND l.expires_ms > sqlock_now_ms())
   AND NOT EXISTS (SELECT 1 FROM sqlock_writer_marks m WHERE m.name = :name)
   AND NOT EXISTS (SELECT 1 FROM sqlock_holders h
                    WHERE h.name = :name AND (h.kind <> :kind OR h.permits <> :permits))
   AND (:kind = 'shared' OR (SELECT count(*) FROM sqlock_holders h WHERE h.name = :name) < :permits)
    ON CONFLICT (name, owner) DO NOTHING;
UPDATE sqlock_counters
   SET value = (SELECT fence FROM sqlock_holders WHERE name = :name AND owner = :owner)
 WHERE name = 'fence'
   AND value < (SELECT fence FROM sqlock_holders WHERE name = :name AND owner = :owner);
SELECT (SELECT fence FROM sqlock_holders WHERE name = :name AND owner = :owner),
       (SELECT 'mismatch:' || kind || ':' || permits FROM sqlock_holders
         WHERE name = :name AND owner <> :owner AND (kind <> :kind OR permits <> :permits)
         LIMIT 1);
