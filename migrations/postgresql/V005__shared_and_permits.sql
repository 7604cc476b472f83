-- sqlock schema for PostgreSQL, version 5: shared locks and semaphore permits (row modes).
-- Safe to re-run; applied by `sqlock migrate` or `psql -X -1 -v ON_ERROR_STOP=1 -f`.
-- Exclusive holds stay one row per name in sqlock.locks, untouched by this migration, so a hold
-- taken before the upgrade stays held. The holders of shared locks and of semaphore permits are
-- rows of sqlock.holders, one per hold, each with its own owner, lease (server clock) and fence
-- (from sqlock.fence_seq, so an exclusive hold's fence exceeds every earlier hold's). A waiting
-- exclusive request marks its name in sqlock.writer_marks for a few seconds at a time, so that
-- new shared holders queue behind it instead of starving it.

CREATE TABLE IF NOT EXISTS sqlock.holders (
  name        text COLLATE "C" NOT NULL,
  owner       text NOT NULL,                -- owner token of this hold
  kind        text NOT NULL CHECK (kind IN ('shared', 'permit')),
  permits     integer NOT NULL DEFAULT 0,   -- kind permit: the name's number of permits; else 0
  mode        text NOT NULL,                -- pessimistic | optimistic
  fence       bigint NOT NULL,              -- fencing token of this hold (from fence_seq)
  acquired_at timestamptz NOT NULL,
  expires_at  timestamptz NOT NULL,
  holder      text NOT NULL DEFAULT '',     -- "host:pid:program" given by the client
  backend_pid integer,
  client_addr inet,
  application text NOT NULL DEFAULT '',
  PRIMARY KEY (name, owner)
);
CREATE INDEX IF NOT EXISTS holders_expires_at ON sqlock.holders (expires_at);

-- One row per name an exclusive request is waiting for; it ends when that request acquires,
-- when its acquire() call ends, or at expires_at (each busy attempt moves it on). UNLOGGED: a
-- mark lost in a crash only lets readers in a little earlier.
CREATE UNLOGGED TABLE IF NOT EXISTS sqlock.writer_marks (
  name       text COLLATE "C" PRIMARY KEY,
  owner      text NOT NULL,                 -- owner token of the waiting exclusive request
  expires_at timestamptz NOT NULL
);

INSERT INTO sqlock.schema_version (version, description)
VALUES (5, 'shared locks and semaphore permits')
ON CONFLICT (version) DO NOTHING;
