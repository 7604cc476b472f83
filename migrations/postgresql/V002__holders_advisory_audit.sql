-- sqlock schema for PostgreSQL, version 2: who holds a lock (backend pid, client address,
-- application_name), the holds of advisory mode, and an audit table of lock events.
-- Safe to re-run; applied after V001 by `sqlock migrate` or `psql -X -1 -v ON_ERROR_STOP=1 -f`.

ALTER TABLE sqlock.locks
  ADD COLUMN IF NOT EXISTS backend_pid integer,
  ADD COLUMN IF NOT EXISTS client_addr inet,
  ADD COLUMN IF NOT EXISTS application text NOT NULL DEFAULT '';

-- Advisory mode: the lock itself is pg_try_advisory_lock(sqlock.lock_key(name)) held by a
-- session; this row records who holds it and its fencing token. UNLOGGED on purpose: advisory
-- locks do not survive a server crash, and neither need these rows (no WAL per acquire). A row
-- whose session is gone is stale: every reader checks pg_locks, and sweep() deletes it.
CREATE UNLOGGED TABLE IF NOT EXISTS sqlock.advisory_holds (
  name        text COLLATE "C" PRIMARY KEY,
  key         bigint NOT NULL,            -- sqlock.lock_key(name)
  owner       text NOT NULL,
  fence       bigint NOT NULL,
  backend_pid integer NOT NULL,           -- the session holding the advisory lock
  acquired_at timestamptz NOT NULL,
  holder      text NOT NULL DEFAULT '',
  client_addr inet,
  application text NOT NULL DEFAULT ''
);

-- Lock events: force_release and sweep always; acquire and release when the setting
-- sqlock.audit is 'on' (ALTER DATABASE app SET sqlock.audit = on; or per role).
CREATE TABLE IF NOT EXISTS sqlock.events (
  id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at     timestamptz NOT NULL DEFAULT clock_timestamp(),
  event  text NOT NULL,                   -- acquire | release | force_release | sweep
  name   text COLLATE "C",
  owner  text,
  fence  bigint,
  mode   text,
  holder text,
  actor  text NOT NULL DEFAULT session_user,
  detail text
);
CREATE INDEX IF NOT EXISTS events_at ON sqlock.events (at);

INSERT INTO sqlock.schema_version (version, description)
VALUES (2, 'holder info, advisory holds, audit events')
ON CONFLICT (version) DO NOTHING;
