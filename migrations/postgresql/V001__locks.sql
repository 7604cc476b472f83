-- sqlock schema for PostgreSQL, version 1: the lock table, the fencing sequence, the schema
-- version table, and the group role that may call the lock functions.
--
-- Run by `sqlock migrate --url postgresql://...` (each file in one transaction), or by hand:
--   psql -X -1 -v ON_ERROR_STOP=1 -f V001__locks.sql
-- Every statement is safe to re-run. The role running it owns the schema and the functions
-- (they are SECURITY DEFINER), so it should be a dedicated owner role, not a superuser.
-- For a schema other than `sqlock`, let `sqlock migrate --url '...?schema=NAME' --print` write
-- the files with the name substituted (the group role becomes NAME_execute).

CREATE SCHEMA IF NOT EXISTS sqlock;

-- Members of sqlock_execute may call the lock functions and nothing else. Creating it needs
-- CREATEROLE; a DBA may create it beforehand instead: CREATE ROLE sqlock_execute NOLOGIN;
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'sqlock_execute') THEN
    CREATE ROLE sqlock_execute NOLOGIN;
  END IF;
END
$$;

CREATE TABLE IF NOT EXISTS sqlock.schema_version (
  version      integer PRIMARY KEY,
  description  text NOT NULL,
  installed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  installed_by text NOT NULL DEFAULT session_user
);

-- Fencing tokens: only ever increases, whatever is released, swept or deleted.
CREATE SEQUENCE IF NOT EXISTS sqlock.fence_seq AS bigint;

-- One row per held lock (pessimistic mode deletes it on release; optimistic mode keeps it with
-- owner NULL and moves `version` on). Names are stored verbatim and compared byte for byte.
-- Expiry is measured on the server's clock (clock_timestamp()), never the client's.
CREATE TABLE IF NOT EXISTS sqlock.locks (
  name        text COLLATE "C" PRIMARY KEY,
  owner       text,                       -- owner token of the hold; NULL = free
  mode        text NOT NULL,              -- pessimistic | optimistic
  fence       bigint NOT NULL,            -- fencing token of the hold (from fence_seq)
  version     bigint NOT NULL DEFAULT 0,  -- compare-and-set version (optimistic mode)
  acquired_at timestamptz NOT NULL,
  expires_at  timestamptz NOT NULL,
  holder      text NOT NULL DEFAULT ''    -- "host:pid:program" given by the client
);
CREATE INDEX IF NOT EXISTS locks_expires_at ON sqlock.locks (expires_at);

-- The schema version, callable by EXECUTE-only roles (the library checks it at connect).
CREATE OR REPLACE FUNCTION sqlock.schema_version() RETURNS integer
  LANGUAGE sql STABLE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
  SELECT coalesce(max(version), 0) FROM sqlock.schema_version
$$;
REVOKE ALL ON FUNCTION sqlock.schema_version() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.schema_version() TO sqlock_execute;

REVOKE ALL ON SCHEMA sqlock FROM PUBLIC;
GRANT USAGE ON SCHEMA sqlock TO sqlock_execute;

INSERT INTO sqlock.schema_version (version, description)
VALUES (1, 'lock table, fence sequence')
ON CONFLICT (version) DO NOTHING;
