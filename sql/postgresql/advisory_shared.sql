-- Shared locks and semaphore permits in advisory mode (schema version 6). A shared hold is
-- pg_advisory_lock_shared(sqlock.lock_key(name)): the server keeps it apart from exclusive holds
-- of the name (the same key, taken exclusively) and queues a shared request behind a waiting
-- exclusive one, so readers arriving all the time do not starve a writer. A permit of a
-- semaphore of N is that shared lock (so permits and exclusive holds of a name exclude each
-- other too) plus pg_advisory_lock(sqlock.permit_key(name, i)) on one of the name's N keys,
-- tried from a random one on. A session carries one hold of a name at a time (the client sees
-- to it: the server grants a session a lock it holds already, past a waiting writer or onto a
-- permit key in use), so each hold is the row (name, session) of sqlock.advisory_shared (owner,
-- kind, N, fence), updated in place by the acquire and freed (owner NULL) by the release; all
-- users of a name must agree on its kind and N while it has holders. Every hold belongs to the session that
-- took it: renew and release it on the SAME connection, as exclusive advisory holds.

-- The advisory-lock key of permit p_slot of a name: the first 8 bytes of SHA-256 of the name's
-- UTF-8 bytes, a zero byte and the slot as 4 bytes. No name's sqlock.lock_key() hashes the same
-- bytes (a text never holds a zero byte).
--   SELECT * FROM pg_locks WHERE locktype = 'advisory'
--      AND (classid::bigint << 32 | objid::bigint) = sqlock.permit_key('reports', 0);
CREATE OR REPLACE FUNCTION sqlock.permit_key(p_name text, p_slot integer) RETURNS bigint
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
  SELECT ('x' || pg_catalog.encode(pg_catalog.substr(pg_catalog.sha256(
            pg_catalog.convert_to(p_name, 'UTF8') || '\x00'::bytea
            || pg_catalog.int4send(p_slot)), 1, 8), 'hex'))::bit(64)::bigint
$$;
REVOKE ALL ON FUNCTION sqlock.permit_key(text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.permit_key(text, integer) TO sqlock_execute;

-- How many of the N permit keys of p_name (permit_key(name, 0 .. N-1)) some session holds now,
-- in this database: the advisory permits of the name, counted with the row modes' (their
-- acquires call this under name_guard).
CREATE OR REPLACE FUNCTION sqlock.advisory_permits_held(p_name text, p_permits integer)
  RETURNS bigint
  LANGUAGE sql STABLE
  SET search_path = sqlock, pg_temp
AS $$
  SELECT count(*)
    FROM pg_catalog.generate_series(0, greatest(p_permits, 0) - 1) AS s (slot)
    CROSS JOIN LATERAL (SELECT sqlock.permit_key(p_name, s.slot::integer) AS key) k
    JOIN pg_catalog.pg_locks l
      ON l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.mode = 'ExclusiveLock'
     AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d
                        WHERE d.datname = pg_catalog.current_database())
     AND l.classid = ((k.key >> 32) & 4294967295)::oid
     AND l.objid = (k.key & 4294967295)::oid
$$;
REVOKE ALL ON FUNCTION sqlock.advisory_permits_held(text, integer) FROM PUBLIC;

-- 'mismatch:<kind>:<permits>' when another session's live advisory hold of p_name is of another
-- kind or number of permits than a request of p_kind with p_permits (0 for shared); else NULL.
-- Rows it meets whose session no longer holds their key are stale, and deleted.
CREATE OR REPLACE FUNCTION sqlock.advisory_mismatch(p_name text, p_kind text, p_permits integer)
  RETURNS text
  LANGUAGE plpgsql VOLATILE
  SET search_path = sqlock, pg_temp
AS $$
DECLARE
  r record;
BEGIN
  FOR r IN SELECT h.kind, h.permits, h.key, h.backend_pid, h.lock_mode
             FROM sqlock.advisory_shared h
            WHERE h.name = p_name AND h.owner IS NOT NULL AND h.backend_pid <> pg_backend_pid()
              AND (h.kind <> p_kind OR h.permits <> p_permits) LOOP
    IF sqlock.advisory_held_as(r.key, r.backend_pid, r.lock_mode) THEN
      RETURN 'mismatch:' || r.kind || ':' || r.permits;
    END IF;
    DELETE FROM sqlock.advisory_shared h WHERE h.name = p_name AND h.backend_pid = r.backend_pid;
  END LOOP;
  RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION sqlock.advisory_mismatch(text, text, integer) FROM PUBLIC;

-- What every advisory release does once the session's lock is unlocked: NOTIFY the name's
-- waiters only while a notification-path waiter is registered for it (waiters inside the server
-- need none), and a 'release' event when auditing is on. Read after the unlock (a new
-- snapshot): a waiter registers before its next attempt, so one that found the lock busy is seen.
CREATE OR REPLACE FUNCTION sqlock.advisory_released(p_name text, p_owner text, p_fence bigint,
                                                    p_holder text) RETURNS void
  LANGUAGE plpgsql VOLATILE
  SET search_path = sqlock, pg_temp
AS $$
BEGIN
  PERFORM 1 FROM sqlock.advisory_waits w WHERE w.name = p_name AND w.until > clock_timestamp();
  IF FOUND THEN
    PERFORM sqlock.wake(p_name);
  END IF;
  IF sqlock.audit_on() THEN
    PERFORM sqlock.log_event('release', p_name, p_owner, p_fence, 'advisory', p_holder);
  END IF;
END
$$;
REVOKE ALL ON FUNCTION sqlock.advisory_released(text, text, bigint, text) FROM PUBLIC;

-- Shared or permit acquire (advisory mode): p_kind 'shared', or 'permit' with p_permits (every
-- user of a name must give the same number). Returns (fence, 'acquired'), (NULL, 'busy'), or
-- (NULL, 'mismatch:<kind>:<permits>') when the name's live holders are of another kind or number
-- of permits (the client raises a configuration error). The fence comes from
-- sqlock.advisory_fence(), so an exclusive hold's fence exceeds every earlier hold's.
-- p_wait_ms = 0: one try. p_wait_ms > 0 (shared only): wait inside the server, in its lock queue
-- (behind a waiting exclusive request), at most that long. Call it on a session that carries
-- no hold of the name.
--   SELECT * FROM sqlock.acquire_advisory_shared('reports', 'owner-token', 'host:pid:app',
--                                                'shared', 0);
--   SELECT * FROM sqlock.acquire_advisory_shared('uploads', 'owner-token', 'host:pid:app',
--                                                'permit', 4);
CREATE OR REPLACE FUNCTION sqlock.acquire_advisory_shared(p_name text, p_owner text,
                                                          p_holder text, p_kind text,
                                                          p_permits integer,
                                                          p_wait_ms bigint DEFAULT 0,
                                                          OUT fence bigint, OUT status text)
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  v_permits  integer := CASE WHEN p_kind = 'permit' THEN p_permits ELSE 0 END;
  v_name_key bigint;
  v_key      bigint;
  v_slot     integer;
  v_first    integer;
  v_miss     text;
BEGIN
  PERFORM sqlock.check_name_owner(p_name, p_owner);
  IF p_kind IS NULL OR p_kind NOT IN ('shared', 'permit') OR (p_kind = 'permit' AND
     coalesce(p_permits, 0) < 1) THEN
    RAISE EXCEPTION 'sqlock: kind must be shared, or permit with permits >= 1 (got %, %)',
      p_kind, p_permits USING ERRCODE = '22023';
  END IF;
  v_name_key := sqlock.lock_key(p_name);
  IF NOT pg_try_advisory_lock_shared(v_name_key) THEN
    IF coalesce(p_wait_ms, 0) <= 0 OR p_kind = 'permit' THEN
      status := coalesce(sqlock.advisory_mismatch(p_name, p_kind, v_permits), 'busy');
      RETURN;
    END IF;
    -- Waits in the server, and past a row mode's exclusive hold too (advisory_take).
    IF NOT sqlock.advisory_take(v_name_key, p_name, true, p_wait_ms) THEN
      status := 'busy';
      RETURN;
    END IF;
  ELSIF sqlock.rows_hold(p_name, false) THEN
    -- A row mode holds the name exclusively (one name, one lock across modes).
    PERFORM pg_advisory_unlock_shared(v_name_key);
    IF coalesce(p_wait_ms, 0) <= 0 OR p_kind = 'permit'
       OR NOT sqlock.advisory_take(v_name_key, p_name, true, p_wait_ms) THEN
      status := 'busy';
      RETURN;
    END IF;
  END IF;
  v_key := v_name_key;
  IF p_kind = 'permit' THEN
    v_first := floor(random() * v_permits)::integer;
    FOR i IN 0 .. v_permits - 1 LOOP
      v_slot := (v_first + i) % v_permits;
      v_key := sqlock.permit_key(p_name, v_slot);
      EXIT WHEN pg_try_advisory_lock(v_key);
      v_slot := NULL;
    END LOOP;
    IF v_slot IS NULL THEN
      PERFORM pg_advisory_unlock_shared(v_name_key);
      status := coalesce(sqlock.advisory_mismatch(p_name, p_kind, v_permits), 'busy');
      RETURN;
    END IF;
  END IF;
  -- One acquire of the name at a time from here to the end of the call, so that two requests
  -- of another kind or number of permits cannot both miss each other's row.
  PERFORM sqlock.name_guard(p_name);
  v_miss := sqlock.advisory_mismatch(p_name, p_kind, v_permits);
  IF v_miss IS NULL THEN
    -- The row modes' shared and permit holds of the name: the same kind and number of permits,
    -- and a permit counts theirs with the advisory permits held (this one's included).
    SELECT 'mismatch:' || h.kind || ':' || h.permits INTO v_miss FROM sqlock.holders h
     WHERE h.name = p_name AND h.expires_at > clock_timestamp()
       AND (h.kind <> p_kind OR h.permits <> v_permits)
     LIMIT 1;
    IF v_miss IS NULL AND p_kind = 'permit'
       AND (SELECT count(*) FROM sqlock.holders h
             WHERE h.name = p_name AND h.expires_at > clock_timestamp())
           + sqlock.advisory_permits_held(p_name, v_permits) > v_permits THEN
      v_miss := 'busy';
    END IF;
  END IF;
  IF v_miss IS NOT NULL THEN
    IF v_slot IS NOT NULL THEN
      PERFORM pg_advisory_unlock(v_key);
    END IF;
    PERFORM pg_advisory_unlock_shared(v_name_key);
    status := v_miss;
    RETURN;
  END IF;
  -- The session's row of the name, updated in place once it exists (no index changes).
  INSERT INTO sqlock.advisory_shared AS h (name, backend_pid, owner, kind, permits, slot, key,
                                           fence, acquired_at, holder, client_addr, application)
  VALUES (p_name, pg_backend_pid(), p_owner, p_kind, v_permits, v_slot, v_key,
          sqlock.advisory_fence(), clock_timestamp(), coalesce(p_holder, ''), inet_client_addr(),
          coalesce(current_setting('application_name', true), ''))
  ON CONFLICT (name, backend_pid) DO UPDATE
     SET owner = excluded.owner, kind = excluded.kind, permits = excluded.permits,
         slot = excluded.slot, key = excluded.key, fence = excluded.fence,
         acquired_at = excluded.acquired_at, holder = excluded.holder,
         client_addr = excluded.client_addr, application = excluded.application
  RETURNING h.fence INTO fence;
  IF sqlock.audit_on() THEN
    PERFORM sqlock.log_event('acquire', p_name, p_owner, fence, 'advisory', p_holder);
  END IF;
  status := 'acquired';
END
$$;
REVOKE ALL ON FUNCTION sqlock.acquire_advisory_shared(text, text, text, text, integer, bigint)
  FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.acquire_advisory_shared(text, text, text, text, integer, bigint)
  TO sqlock_execute;

-- Release of a shared or permit hold (advisory mode), on the holding session: unlocks its locks
-- and frees its row (owner NULL). true = released; false = nothing of this owner was held by this session
-- (idempotent).
--   SELECT sqlock.release_advisory_shared('reports', 'owner-token');
CREATE OR REPLACE FUNCTION sqlock.release_advisory_shared(p_name text, p_owner text)
  RETURNS boolean
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
DECLARE
  r record;
BEGIN
  UPDATE sqlock.advisory_shared h SET owner = NULL
   WHERE h.name = p_name AND h.backend_pid = pg_backend_pid() AND h.owner = p_owner
  RETURNING h.kind, h.key, h.fence, h.holder INTO r;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  -- pg_advisory_unlock* is false (with a WARNING) when this session did not hold the lock.
  IF r.kind = 'permit' AND NOT pg_advisory_unlock(r.key) THEN
    RETURN false;
  END IF;
  IF NOT pg_advisory_unlock_shared(sqlock.lock_key(p_name)) THEN
    RETURN false;
  END IF;
  PERFORM sqlock.advisory_released(p_name, p_owner, r.fence, r.holder);
  RETURN true;
END
$$;
REVOKE ALL ON FUNCTION sqlock.release_advisory_shared(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.release_advisory_shared(text, text) TO sqlock_execute;

-- Renew of a shared or permit hold (advisory mode): no lease to extend; true while the hold is
-- this owner's and the calling session still holds its lock. false = lost (forced, or the
-- session was replaced).
--   SELECT sqlock.renew_advisory_shared('reports', 'owner-token');
CREATE OR REPLACE FUNCTION sqlock.renew_advisory_shared(p_name text, p_owner text)
  RETURNS boolean
  LANGUAGE sql STABLE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
  SELECT EXISTS (
    SELECT 1 FROM sqlock.advisory_shared h
     WHERE h.name = p_name AND h.backend_pid = pg_backend_pid() AND h.owner = p_owner
       AND sqlock.advisory_held_as(h.key, h.backend_pid, h.lock_mode))
$$;
REVOKE ALL ON FUNCTION sqlock.renew_advisory_shared(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.renew_advisory_shared(text, text) TO sqlock_execute;
