-- sqlock schema for PostgreSQL, version 3: the EXECUTE-only group role belongs to this database.
-- Role names are cluster-wide and every role may CONNECT to every database by default, so with
-- one shared group role an application role made for database A could call the functions of
-- database B (force_release included). `sqlock migrate --url '...?execute_role=NAME'` renders
-- `sqlock_execute` in every file as NAME (default: <schema>_execute, as before): give each
-- database of a cluster its own NAME and make the application roles members of it.
-- This migration creates the role, lets it use the schema, and takes the functions and the
-- schema away from the default-named role when another role is configured (an upgrade that
-- moves to a per-database role); the routines installed after it grant EXECUTE to the role.
-- Safe to re-run.

DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'sqlock_execute') THEN
    CREATE ROLE sqlock_execute NOLOGIN;
  END IF;
END
$$;
GRANT USAGE ON SCHEMA sqlock TO sqlock_execute;

DO $$
DECLARE
  v_default text := 'sqlock' || '_execute';  -- the name the role had before version 3
  r record;
BEGIN
  -- (Rendered, the literal below is the configured role: nothing to take when it is the default.)
  IF v_default = 'sqlock_execute'
     OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = v_default) THEN
    RETURN;
  END IF;
  FOR r IN
    SELECT p.oid::regprocedure AS fn
      FROM pg_catalog.pg_proc p
      JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
     WHERE n.nspname = 'sqlock'
  LOOP
    EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM %I', r.fn, v_default);
  END LOOP;
  EXECUTE format('REVOKE USAGE ON SCHEMA sqlock FROM %I', v_default);
END
$$;

INSERT INTO sqlock.schema_version (version, description)
VALUES (3, 'EXECUTE role per database (execute_role at migrate)')
ON CONFLICT (version) DO NOTHING;
