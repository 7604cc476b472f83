-- sqlock schema for PostgreSQL, version 14: the requests waiting for a lock are listed
-- (`sqlock list --waiting`, the admin page, client::waiting()). Safe to re-run, and to run while
-- holds are live: nothing stored changes.
--
-- A waiting request leaves no trace of its own in the server (row modes try again on NOTIFY; an
-- advisory wait inside the server shows only a session and a lock key in pg_locks). From this
-- version a client writes each of its requests that keeps waiting into sqlock.waiting_requests,
-- in batches from one background thread (sqlock.record_waits, sql/postgresql/waiting.sql): a
-- request that waits less than about 10 ms is never written, a longer one costs one row write
-- when it starts and one delete when it ends, off its lock path. A row lives until `until`
-- unless its client writes it again: a client that dies while waiting leaves it for at most
-- that long (the sweep deletes it; sqlock.list_waiting skips it).
-- UNLOGGED: what it holds is for the operator's eyes only, and lives no longer than a wait.

CREATE UNLOGGED TABLE IF NOT EXISTS sqlock.waiting_requests (
  name    text COLLATE "C" NOT NULL,
  owner   text NOT NULL,                      -- the waiting request's owner token
  holder  text NOT NULL DEFAULT '',
  kind    text NOT NULL DEFAULT 'exclusive',  -- exclusive, shared or permit
  permits integer NOT NULL DEFAULT 0,         -- kind permit: the name's number of permits
  since   timestamptz NOT NULL,               -- server time the request began waiting
  until   timestamptz NOT NULL,               -- the row is stale after this
  PRIMARY KEY (name, owner)
);

INSERT INTO sqlock.schema_version (version, description)
VALUES (14, 'waiting requests are listed')
ON CONFLICT (version) DO NOTHING;
