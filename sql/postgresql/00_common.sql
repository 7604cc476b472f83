-- Helpers used by the lock functions. Installed first (files run in name order).

-- The 64-bit advisory-lock key of a name: the first 8 bytes of SHA-256 of its UTF-8 bytes, as a
-- signed bigint. Any client (or a DBA) can compute it:
--   SELECT sqlock.lock_key('orders:42');
--   SELECT * FROM pg_locks WHERE locktype = 'advisory'
--      AND (classid::bigint << 32 | objid::bigint) = sqlock.lock_key('orders:42');
-- STABLE, as convert_to() is: the planner then inlines the expression into every caller (an
-- IMMUTABLE function over a STABLE one is run as a function of its own on each call).
CREATE OR REPLACE FUNCTION sqlock.lock_key(p_name text) RETURNS bigint
  LANGUAGE sql STABLE STRICT PARALLEL SAFE
AS $$
  SELECT ('x' || pg_catalog.encode(pg_catalog.substr(
            pg_catalog.sha256(pg_catalog.convert_to(p_name, 'UTF8')), 1, 8), 'hex'))::bit(64)::bigint
$$;
REVOKE ALL ON FUNCTION sqlock.lock_key(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.lock_key(text) TO sqlock_execute;

-- True when session `p_pid` holds the session- or transaction-level advisory lock `p_key` in
-- this database in mode `p_mode` ('ExclusiveLock', or 'ShareLock' for a shared hold: the same
-- key, so the mode tells a session's shared hold of a name from its exclusive one).
-- (PL/pgSQL, which keeps its plan: a SQL function with a sub-select is planned on every call.)
CREATE OR REPLACE FUNCTION sqlock.advisory_held_as(p_key bigint, p_pid integer, p_mode text)
  RETURNS boolean
  LANGUAGE plpgsql STABLE
AS $$
BEGIN
  RETURN EXISTS (
    SELECT 1 FROM pg_catalog.pg_locks l
     WHERE l.locktype = 'advisory' AND l.granted AND l.pid = p_pid AND l.objsubid = 1
       AND l.mode = p_mode
       AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d
                          WHERE d.datname = pg_catalog.current_database())
       AND l.classid = ((p_key >> 32) & 4294967295)::oid
       AND l.objid = (p_key & 4294967295)::oid);
END
$$;
REVOKE ALL ON FUNCTION sqlock.advisory_held_as(bigint, integer, text) FROM PUBLIC;

-- True when session `p_pid` holds the advisory lock `p_key` exclusively (an exclusive hold).
CREATE OR REPLACE FUNCTION sqlock.advisory_held(p_key bigint, p_pid integer) RETURNS boolean
  LANGUAGE sql STABLE
AS $$
  SELECT sqlock.advisory_held_as(p_key, p_pid, 'ExclusiveLock')
$$;
REVOKE ALL ON FUNCTION sqlock.advisory_held(bigint, integer) FROM PUBLIC;

-- Waits in the server's lock queue for the advisory lock p_key (shared when p_shared), at most
-- p_wait_ms (lock_timeout); true = the session holds it now, false = the time ran out. A client
-- gone meanwhile is noticed within 100 ms. Used by the advisory acquires of every kind.
CREATE OR REPLACE FUNCTION sqlock.advisory_wait(p_key bigint, p_shared boolean, p_wait_ms bigint)
  RETURNS boolean
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
  v_timeout text := pg_catalog.current_setting('lock_timeout');
BEGIN
  PERFORM pg_catalog.set_config('lock_timeout', least(p_wait_ms, 2147483647) || 'ms', true);
  PERFORM pg_catalog.set_config('client_connection_check_interval', '100ms', true);
  BEGIN
    IF p_shared THEN
      PERFORM pg_catalog.pg_advisory_lock_shared(p_key);
    ELSE
      PERFORM pg_catalog.pg_advisory_lock(p_key);
    END IF;
  EXCEPTION WHEN lock_not_available THEN
    RETURN false;
  END;
  PERFORM pg_catalog.set_config('lock_timeout', v_timeout, true);
  RETURN true;
END
$$;
REVOKE ALL ON FUNCTION sqlock.advisory_wait(bigint, boolean, bigint) FROM PUBLIC;

-- ISO-8601 UTC text of a time, as list() reports it.
CREATE OR REPLACE FUNCTION sqlock.iso(p_at timestamptz) RETURNS text
  LANGUAGE sql IMMUTABLE
AS $$
  SELECT pg_catalog.to_char(p_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;
REVOKE ALL ON FUNCTION sqlock.iso(timestamptz) FROM PUBLIC;

-- Wakes waiters of a name: NOTIFY on the channel named like the schema, the name as payload
-- (an empty payload, meaning "anything may have changed", for names too long for a payload).
-- Delivered when the calling transaction commits.
CREATE OR REPLACE FUNCTION sqlock.wake(p_name text) RETURNS void
  LANGUAGE sql VOLATILE
AS $$
  SELECT pg_catalog.pg_notify('sqlock',
           CASE WHEN pg_catalog.octet_length(p_name) <= 7000 THEN p_name ELSE '' END)
$$;
REVOKE ALL ON FUNCTION sqlock.wake(text) FROM PUBLIC;

-- True when acquire/release events are audited (setting sqlock.audit = on).
CREATE OR REPLACE FUNCTION sqlock.audit_on() RETURNS boolean
  LANGUAGE sql STABLE
AS $$
  SELECT coalesce(pg_catalog.current_setting('sqlock.audit', true), '') IN ('on', 'true', '1')
$$;
REVOKE ALL ON FUNCTION sqlock.audit_on() FROM PUBLIC;

-- Appends an event to sqlock.events.
CREATE OR REPLACE FUNCTION sqlock.log_event(p_event text, p_name text, p_owner text,
                                            p_fence bigint, p_mode text, p_holder text,
                                            p_detail text DEFAULT NULL) RETURNS void
  LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
  INSERT INTO sqlock.events (event, name, owner, fence, mode, holder, detail)
  VALUES (p_event, p_name, p_owner, p_fence, p_mode, p_holder, p_detail);
END
$$;
REVOKE ALL ON FUNCTION sqlock.log_event(text, text, text, bigint, text, text, text) FROM PUBLIC;

-- Appends a 'force_release' event to sqlock.events. Its actor: "ACTOR (role ROLE)", who forced
-- it as the client named them (at most 200 characters) beside the role the database
-- authenticated; the role alone when no actor is named (a client of schema version 12).
CREATE OR REPLACE FUNCTION sqlock.log_forced(p_actor text, p_name text, p_owner text,
                                             p_fence bigint, p_mode text, p_holder text,
                                             p_detail text DEFAULT NULL) RETURNS void
  LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
  INSERT INTO sqlock.events (event, name, owner, fence, mode, holder, actor, detail)
  VALUES ('force_release', p_name, p_owner, p_fence, p_mode, p_holder,
          CASE WHEN coalesce(p_actor, '') = '' THEN session_user::text
               ELSE pg_catalog.left(p_actor, 200) || ' (role ' || session_user || ')' END,
          p_detail);
END
$$;
REVOKE ALL ON FUNCTION sqlock.log_forced(text, text, text, bigint, text, text, text) FROM PUBLIC;

-- Argument checks of the lock functions. They raise SQLSTATE 22023 (invalid_parameter_value),
-- which the client reports as a configuration error.
CREATE OR REPLACE FUNCTION sqlock.check_name_owner(p_name text, p_owner text) RETURNS void
  LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
  IF coalesce(p_name, '') = '' OR coalesce(p_owner, '') = '' THEN
    RAISE EXCEPTION 'sqlock: lock name and owner must not be empty' USING ERRCODE = '22023';
  END IF;
END
$$;
REVOKE ALL ON FUNCTION sqlock.check_name_owner(text, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION sqlock.check_lease(p_lease_ms bigint) RETURNS void
  LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
  IF p_lease_ms IS NULL OR p_lease_ms <= 0 THEN
    RAISE EXCEPTION 'sqlock: lease must be > 0 ms (got %)', p_lease_ms USING ERRCODE = '22023';
  END IF;
END
$$;
REVOKE ALL ON FUNCTION sqlock.check_lease(bigint) FROM PUBLIC;

-- The advisory-lock key of a non-empty name (transaction-scoped locks).
CREATE OR REPLACE FUNCTION sqlock.checked_key(p_name text) RETURNS bigint
  LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
  IF coalesce(p_name, '') = '' THEN
    RAISE EXCEPTION 'sqlock: lock name must not be empty' USING ERRCODE = '22023';
  END IF;
  RETURN sqlock.lock_key(p_name);
END
$$;
REVOKE ALL ON FUNCTION sqlock.checked_key(text) FROM PUBLIC;

-- The (fence, status) row a lease-mode acquire returns: (NULL, p_miss) when p_fence is NULL
-- ('busy', or 'retry' for a lost compare-and-set), else (p_fence, 'acquired'), written to
-- sqlock.events when auditing is on.
CREATE OR REPLACE FUNCTION sqlock.acquire_result(p_fence bigint, p_miss text, p_name text,
                                                 p_owner text, p_mode text, p_holder text)
  RETURNS TABLE (fence bigint, status text)
  LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
  IF p_fence IS NULL THEN
    RETURN QUERY SELECT NULL::bigint, p_miss;
  ELSE
    IF sqlock.audit_on() THEN
      PERFORM sqlock.log_event('acquire', p_name, p_owner, p_fence, p_mode, p_holder);
    END IF;
    RETURN QUERY SELECT p_fence, 'acquired'::text;
  END IF;
END
$$;
REVOKE ALL ON FUNCTION sqlock.acquire_result(bigint, text, text, text, text, text) FROM PUBLIC;

-- What every release does once it has removed this owner's hold: wake the name's waiters and,
-- when auditing is on, write a 'release' event.
CREATE OR REPLACE FUNCTION sqlock.after_release(p_name text, p_owner text, p_fence bigint,
                                                p_mode text, p_holder text) RETURNS void
  LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
  -- Only names somebody waits for are notified (schema version 11): waiting clients register
  -- with advisory_wait_notify() before their second attempt, as advisory mode's do. A NOTIFY
  -- nobody needs wakes every listening session, whose reading of the notification queue is a
  -- transaction of its own: a third transaction per lock+unlock pair, measured.
  PERFORM 1 FROM sqlock.advisory_waits w WHERE w.name = p_name AND w.until > clock_timestamp();
  IF FOUND THEN
    PERFORM sqlock.wake(p_name);
  END IF;
  IF sqlock.audit_on() THEN
    PERFORM sqlock.log_event('release', p_name, p_owner, p_fence, p_mode, p_holder);
  END IF;
END
$$;
REVOKE ALL ON FUNCTION sqlock.after_release(text, text, bigint, text, text) FROM PUBLIC;
