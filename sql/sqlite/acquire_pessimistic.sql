-- Pessimistic exclusive acquire: take over an expired row, insert ours if the name is free and
-- no live shared or permit hold is left, bump the fence counter, return our fence (no row =
-- busy). Runs in one BEGIN IMMEDIATE transaction. Idempotent for one owner: a retried acquire
-- finds its own row and returns its fence. A busy attempt made by a waiting acquire() call
-- (:mark_ms > 0) leaves or refreshes its writer mark (writer_mark.sql); acquiring removes it.
DELETE FROM sqlock_locks
 WHERE name = :name AND owner <> :owner
   AND (owner = '' OR boot_id <> sqlock_boot_id() OR expires_ms <= sqlock_now_ms());
INSERT INTO sqlock_locks (name, owner, fence, version, boot_id, acquired_ms, expires_ms,
                          acquired_at, mode, holder)
SELECT :name, :owner, c.value + 1, 0, sqlock_boot_id(), sqlock_now_ms(),
       sqlock_now_ms() + :lease_ms, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'pessimistic', :holder
  FROM sqlock_counters c
 WHERE c.name = 'fence'
   AND NOT EXISTS (SELECT 1 FROM sqlock_holders h
                    WHERE h.name = :name
                      AND h.boot_id = sqlock_boot_id() AND h.expires_ms > sqlock_now_ms())
    ON CONFLICT (name) DO NOTHING;
