-- sqlock schema for PostgreSQL, version 6: shared locks and semaphore permits in advisory mode.
-- Safe to re-run, and to run while advisory locks are held: exclusive advisory holds keep their
-- key, their row in sqlock.advisory_holds and their fence; nothing of version 5 changes.
--
-- A shared hold is pg_advisory_lock_shared on the key an exclusive hold of the name takes
-- (sqlock.lock_key(name)), so the server itself keeps shared and exclusive holds apart, and a
-- shared request queues behind a waiting exclusive one. A permit of a semaphore of N is the same
-- shared lock plus an exclusive lock on one of N keys of its own (sqlock.permit_key(name, i),
-- i = 0 .. N-1). A session carries one hold of a name at a time, so the holds have one row per
-- name and session, updated in place (no index change) by the acquire — owner, kind, N, fence
-- (from sqlock.advisory_fence(), like exclusive advisory holds) — and freed (owner NULL) by the
-- release. UNLOGGED, as advisory_holds: no WAL per hold; a row whose session no longer holds
-- its key is stale, and every reader checks pg_locks; sweep deletes free and stale rows.

CREATE UNLOGGED TABLE IF NOT EXISTS sqlock.advisory_shared (
  name        text COLLATE "C" NOT NULL,
  backend_pid integer NOT NULL,             -- the session holding the advisory lock(s)
  owner       text,                         -- NULL: free (released)
  kind        text NOT NULL CHECK (kind IN ('shared', 'permit')),
  permits     integer NOT NULL DEFAULT 0,   -- kind permit: the name's number of permits; else 0
  slot        integer,                      -- kind permit: which of the N keys; else NULL
  key         bigint NOT NULL,              -- the key whose lock proves the hold: lock_key(name)
                                            -- for shared, permit_key(name, slot) for a permit
  lock_mode   text GENERATED ALWAYS AS   -- the mode of that lock in pg_locks
                (CASE kind WHEN 'shared' THEN 'ShareLock' ELSE 'ExclusiveLock' END) STORED,
  fence       bigint NOT NULL,
  acquired_at timestamptz NOT NULL,
  holder      text NOT NULL DEFAULT '',
  client_addr inet,
  application text NOT NULL DEFAULT '',
  PRIMARY KEY (name, backend_pid)
);

INSERT INTO sqlock.schema_version (version, description)
VALUES (6, 'advisory: shared locks and semaphore permits')
ON CONFLICT (version) DO NOTHING;
