-- sqlock schema for PostgreSQL, version 4: advisory mode without a durable write per hold.
-- Safe to re-run, and to run while advisory locks are held: the holds of the routines of
-- version 3 stay valid (same table, same lock keys), and their fences stay below every new one.
--
-- Fencing tokens of advisory holds come from sqlock.advisory_fence() (sql/postgresql/
-- advisory_fence.sql): (epoch << 44) | counter. The counter is an UNLOGGED sequence (no WAL, so
-- no WAL flush every 32 values as a logged sequence needs); the server resets it to 1 after a
-- crash, together with every UNLOGGED table. The epoch is durable (sqlock.fence_epoch, logged)
-- and rises by one whenever the UNLOGGED copy in sqlock.fence_epoch_live is found empty: at
-- the first acquire after this migration, after a crash, and on a replica just promoted. So
-- (epoch << 44 | counter) strictly rises across clean restarts (nothing is reset) and crashes
-- (the epoch rose) alike. 44 bits of counter = 1.7e13 holds per epoch.

CREATE UNLOGGED SEQUENCE IF NOT EXISTS sqlock.advisory_fence_seq AS bigint;

CREATE TABLE IF NOT EXISTS sqlock.fence_epoch (
  one   boolean PRIMARY KEY DEFAULT true CHECK (one),
  epoch bigint NOT NULL                    -- the newest epoch handed out
);
CREATE UNLOGGED TABLE IF NOT EXISTS sqlock.fence_epoch_live (
  one   boolean PRIMARY KEY DEFAULT true CHECK (one),
  epoch bigint NOT NULL                    -- the epoch in use since the last reset
);
-- The first epoch handed out (this value + 1) must exceed every fence given so far, in every
-- mode: advisory holds of version 3 took theirs from sqlock.fence_seq.
INSERT INTO sqlock.fence_epoch (epoch)
SELECT greatest((SELECT s.last_value FROM sqlock.fence_seq s),
                (SELECT coalesce(max(h.fence), 0) FROM sqlock.advisory_holds h)) >> 44
ON CONFLICT (one) DO NOTHING;

-- Waiters on the notification path (those not waiting inside the server) register here until
-- their deadline; a release sends NOTIFY only while a registration of its name is current.
CREATE UNLOGGED TABLE IF NOT EXISTS sqlock.advisory_waits (
  name  text COLLATE "C" PRIMARY KEY,
  until timestamptz NOT NULL
);

-- advisory_holds keeps one row per name now: release leaves it (a row whose session no longer
-- holds the lock is stale, as before: every reader checks pg_locks), the next acquire of the
-- name updates it in place.

-- (sql/postgresql/acquire_advisory.sql replaces the three-argument acquire_advisory of version 3
-- by a four-argument one whose fourth argument has a default, so version-3 callers keep working.)

INSERT INTO sqlock.schema_version (version, description)
VALUES (4, 'advisory: fences from an UNLOGGED sequence and a durable epoch, wait registrations')
ON CONFLICT (version) DO NOTHING;
