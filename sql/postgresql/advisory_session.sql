-- The lean advisory pair the sqlock library calls (schema version 8). acquire_advisory and
-- release_advisory also record every hold in sqlock.advisory_holds, for callers that keep no
-- record of their own (psql, pgbench, another language). That row write costs the server more
-- than the lock itself: an UPDATE takes a transaction id, so its commit writes a WAL record
-- and wakes the WAL writer, even on an UNLOGGED table (docs/backends/postgres.md has the
-- figures). The library knows its own holds (a session carries one hold of a name, tracked in
-- the client), so it calls these functions, which write nothing, and records a hold with
-- advisory_record() from another session once the hold has lived ~10 ms: a short hold is never
-- written, and a long one pays one row write in the background. Until then list() of other
-- processes does not show the hold (the holding process's own list() records its holds first).
--
-- The fence of a hold taken here is known to the server at once all the same: the session also
-- takes the advisory lock (fence >> 32, fence & 0xFFFFFFFF) in share mode, the two-int4 form
-- of advisory locks (pg_locks.objsubid = 2, a key space apart from the one-bigint keys of
-- names). fence_check() finds a session holding both the name's key and its fence's pair.
-- Nothing is written for it; the lock ends with the hold or its session. (An application that
-- took that very int4 pair exclusively would make fence_check() refuse this one hold: refusal is
-- the safe side, and fences are far above the small numbers applications use. sqlock's own
-- two-int4 locks, name_guard's (1397836875, hashtext(name)), meet a fence's pair only in fence
-- epoch 341268: the epoch rises once per crash or promotion.)

-- Takes the advisory lock of p_name, whose key p_key the caller computed, on the calling
-- session: one try (p_wait_ms = 0) or a wait inside the server of at most p_wait_ms
-- (lock_timeout), as acquire_advisory. A name a row mode holds (a live row in sqlock.locks or
-- sqlock.holders) is busy here too: the key is given back at once (or, waiting, taken again
-- once the row's hold ends: advisory_take). Returns the fencing token (sqlock.advisory_fence(),
-- inline in the common case), or NULL when busy. The caller must not hold the lock on this
-- session already (a session lock is reentrant: it would be granted again). p_owner and
-- p_holder go to the audit log only (sqlock.audit = on). One scalar result: a function
-- returning a row costs the server a tuplestore per call.
-- The library calls this form (schema version 9): sqlock.lock_key(p_name) in SQL — SHA-256, hex
-- encoding and a bit-string cast, twice a pair — was a measurable part of the pair's time
-- (docs/backends/postgres.md). p_key must be sqlock.lock_key(p_name); the library computes it
-- with the same SHA-256 (src/backends/postgres/lock_key.cpp) and a test checks that the two
-- agree. A wrong key is refused nowhere but gains nothing either: pg_try_advisory_lock(any key)
-- is open to every role, and fence_check(), advisory_record() and force_release() look holds up
-- by lock_key(name), so a hold on a wrong key is not one of the name's (fence_check refuses it).
--   SELECT sqlock.advisory_lock_key(sqlock.lock_key('orders:42'), 'orders:42', 'owner-token',
--                                   'host:pid:app');
CREATE OR REPLACE FUNCTION sqlock.advisory_lock_key(p_key bigint, p_name text, p_owner text,
                                                    p_holder text, p_wait_ms bigint DEFAULT 0)
  RETURNS bigint
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
DECLARE
  v_epoch bigint;
  v_n     bigint;
  v_rows  boolean;
  v_fence bigint;
BEGIN
  IF p_key IS NULL OR p_name IS NULL OR p_name = '' OR p_owner IS NULL OR p_owner = '' THEN
    PERFORM sqlock.check_name_owner(p_name, p_owner);
    RAISE EXCEPTION 'sqlock: advisory_lock_key needs the key of the name' USING ERRCODE = '22023';
  END IF;
  IF pg_try_advisory_lock(p_key) THEN
    -- One statement after the lock (a snapshot taken once the session holds the key, so a row
    -- mode's hold committed before is seen): the fence (the epoch and the next counter) and
    -- whether the row modes have anything of the name (two index probes: plain index scans,
    -- which cost the server less per call than index-only scans here). No epoch row (first
    -- acquire after a crash or promotion: no row at all, so v_rows is NULL too), a spent counter
    -- or rows take the slow paths.
    SELECT e.epoch, nextval('sqlock.advisory_fence_seq'),
           EXISTS (SELECT 1 FROM sqlock.locks l WHERE l.name = p_name AND l.owner IS NOT NULL)
           OR EXISTS (SELECT 1 FROM sqlock.holders h
                       WHERE h.name = p_name AND h.expires_at > clock_timestamp())
      INTO v_epoch, v_n, v_rows
      FROM sqlock.fence_epoch_live e;
    IF (v_rows OR v_epoch IS NULL) AND sqlock.rows_hold(p_name, true) THEN
      -- A row mode holds the name (one name, one lock across modes): give the key back.
      PERFORM pg_advisory_unlock(p_key);
      IF coalesce(p_wait_ms, 0) <= 0 OR NOT sqlock.advisory_take(p_key, p_name, false, p_wait_ms)
      THEN
        RETURN NULL;
      END IF;
      v_epoch := NULL;
    END IF;
  ELSIF coalesce(p_wait_ms, 0) <= 0
        OR NOT sqlock.advisory_take(p_key, p_name, false, p_wait_ms) THEN
    RETURN NULL;
  END IF;
  IF v_epoch IS NOT NULL AND v_n < 17592186044416 THEN
    v_fence := (v_epoch << 44) | v_n;
  ELSE
    v_fence := sqlock.advisory_fence();  -- the epoch raised if need be (or a spent counter's error)
  END IF;
  PERFORM pg_try_advisory_lock_shared((v_fence >> 32)::integer,
                                      (v_fence & 4294967295)::bit(32)::integer);
  IF sqlock.audit_on() THEN
    PERFORM sqlock.log_event('acquire', p_name, p_owner, v_fence, 'advisory', p_holder);
  END IF;
  RETURN v_fence;
END
$$;
REVOKE ALL ON FUNCTION sqlock.advisory_lock_key(bigint, text, text, text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.advisory_lock_key(bigint, text, text, text, bigint)
  TO sqlock_execute;

-- Unlocks the calling session's advisory lock of p_name (key p_key = sqlock.lock_key(p_name), see
-- advisory_lock_key), taken with fence p_fence, once; true = it was held. Pass p_recorded = true
-- when the hold was recorded with advisory_record(): its row then stops naming this session, so
-- that a later hold of the name on this session is not shown with the old owner and fence
-- before its own record. Waiters registered on the notification path are woken as by
-- release_advisory.
--   SELECT sqlock.advisory_unlock_key(sqlock.lock_key('orders:42'), 'orders:42', 'owner-token',
--                                     17592186044417, false);
CREATE OR REPLACE FUNCTION sqlock.advisory_unlock_key(p_key bigint, p_name text, p_owner text,
                                                      p_fence bigint, p_recorded boolean)
  RETURNS boolean
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
BEGIN
  -- pg_advisory_unlock is false (with a WARNING) when this session did not hold the lock.
  IF p_key IS NULL OR p_name IS NULL OR NOT pg_advisory_unlock(p_key) THEN
    RETURN false;
  END IF;
  IF p_fence IS NOT NULL THEN
    PERFORM pg_advisory_unlock_shared((p_fence >> 32)::integer,
                                      (p_fence & 4294967295)::bit(32)::integer);
  END IF;
  IF p_recorded THEN
    UPDATE sqlock.advisory_holds h SET backend_pid = 0
     WHERE h.name = p_name AND h.backend_pid = pg_backend_pid();
  END IF;
  -- A statement of its own, after the unlock (see release_advisory).
  PERFORM 1 FROM sqlock.advisory_waits w WHERE w.name = p_name AND w.until > clock_timestamp();
  IF FOUND THEN
    PERFORM sqlock.wake(p_name);
  END IF;
  IF sqlock.audit_on() THEN
    PERFORM sqlock.log_event('release', p_name, p_owner, p_fence, 'advisory', NULL);
  END IF;
  RETURN true;
END
$$;
REVOKE ALL ON FUNCTION sqlock.advisory_unlock_key(bigint, text, text, bigint, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.advisory_unlock_key(bigint, text, text, bigint, boolean)
  TO sqlock_execute;

-- advisory_lock_key() for callers that do not compute the key (the library before version 9):
--   SELECT sqlock.advisory_lock('orders:42', 'owner-token', 'host:pid:app');
CREATE OR REPLACE FUNCTION sqlock.advisory_lock(p_name text, p_owner text, p_holder text,
                                                p_wait_ms bigint DEFAULT 0)
  RETURNS bigint
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
BEGIN
  RETURN sqlock.advisory_lock_key(sqlock.lock_key(p_name), p_name, p_owner, p_holder, p_wait_ms);
END
$$;
REVOKE ALL ON FUNCTION sqlock.advisory_lock(text, text, text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.advisory_lock(text, text, text, bigint) TO sqlock_execute;

-- advisory_unlock_key() for callers that do not compute the key:
--   SELECT sqlock.advisory_unlock('orders:42', 'owner-token', 17592186044417, false);
CREATE OR REPLACE FUNCTION sqlock.advisory_unlock(p_name text, p_owner text, p_fence bigint,
                                                  p_recorded boolean)
  RETURNS boolean
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
BEGIN
  RETURN sqlock.advisory_unlock_key(sqlock.lock_key(p_name), p_name, p_owner, p_fence,
                                    p_recorded);
END
$$;
REVOKE ALL ON FUNCTION sqlock.advisory_unlock(text, text, bigint, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.advisory_unlock(text, text, bigint, boolean) TO sqlock_execute;

-- True when session p_pid holds the advisory lock of p_name taken with fence p_fence by
-- advisory_lock() (the name's key exclusively, the fence's int4 pair in share mode).
CREATE OR REPLACE FUNCTION sqlock.advisory_fence_held(p_name text, p_fence bigint)
  RETURNS boolean
  LANGUAGE sql STABLE
  SET search_path = sqlock, pg_temp
AS $$
  SELECT EXISTS (
    SELECT 1 FROM pg_catalog.pg_locks f
     WHERE f.locktype = 'advisory' AND f.granted AND f.objsubid = 2 AND f.mode = 'ShareLock'
       AND f.database = (SELECT d.oid FROM pg_catalog.pg_database d
                          WHERE d.datname = pg_catalog.current_database())
       AND f.classid = (p_fence >> 32)::oid AND f.objid = (p_fence & 4294967295)::oid
       AND sqlock.advisory_held(sqlock.lock_key(p_name), f.pid))
$$;
REVOKE ALL ON FUNCTION sqlock.advisory_fence_held(text, bigint) FROM PUBLIC;

-- True when the calling session holds the advisory lock of p_name (the library's renewal
-- check: a hold on a session has no lease, only the session's life).
--   SELECT sqlock.advisory_holding('orders:42');
CREATE OR REPLACE FUNCTION sqlock.advisory_holding(p_name text) RETURNS boolean
  LANGUAGE sql STABLE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
  SELECT sqlock.advisory_held(sqlock.lock_key(p_name), pg_backend_pid())
$$;
REVOKE ALL ON FUNCTION sqlock.advisory_holding(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.advisory_holding(text) TO sqlock_execute;

-- Records holds taken with advisory_lock() in sqlock.advisory_holds, from any session. p_holds
-- is a JSON array of {name, owner, fence, pid, age_ms, holder}: `name` held by `owner` with
-- fence `fence` on the session of backend pid `pid` for `age_ms` milliseconds now (the holder
-- measures the age on its monotonic clock; acquired_at is the server's clock minus it). A hold its session no longer holds is skipped, and a row is only replaced by a
-- hold with a higher fence or when its own hold is gone (records of one name from two
-- processes may arrive in either order). Returns the number of rows written.
--   SELECT sqlock.advisory_record('[{"name": "orders:42", "owner": "owner-token",
--     "fence": 17592186044417, "pid": 12345, "age_ms": 10, "holder": "host:pid:app"}]');
CREATE OR REPLACE FUNCTION sqlock.advisory_record(p_holds jsonb) RETURNS integer
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
DECLARE
  v_n integer;
BEGIN
  INSERT INTO sqlock.advisory_holds AS h (name, key, owner, fence, backend_pid, acquired_at,
                                          holder, client_addr, application)
  SELECT r.name, sqlock.lock_key(r.name), r.owner, r.fence, r.pid,
         clock_timestamp() - greatest(r.age_ms, 0) * interval '1 ms',
         coalesce(r.holder, ''), a.client_addr, coalesce(a.application_name, '')
    FROM jsonb_to_recordset(p_holds)
           AS r (name text, owner text, fence bigint, pid integer, age_ms bigint, holder text)
    LEFT JOIN pg_stat_activity a ON a.pid = r.pid
   WHERE r.name IS NOT NULL AND r.name <> '' AND r.owner IS NOT NULL AND r.fence IS NOT NULL
     AND r.age_ms IS NOT NULL AND sqlock.advisory_held(sqlock.lock_key(r.name), r.pid)
  ON CONFLICT (name) DO UPDATE
     SET key = excluded.key, owner = excluded.owner, fence = excluded.fence,
         backend_pid = excluded.backend_pid, acquired_at = excluded.acquired_at,
         holder = excluded.holder, client_addr = excluded.client_addr,
         application = excluded.application
   WHERE h.fence < excluded.fence OR NOT sqlock.advisory_held(h.key, h.backend_pid);
  GET DIAGNOSTICS v_n = ROW_COUNT;
  RETURN v_n;
END
$$;
REVOKE ALL ON FUNCTION sqlock.advisory_record(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.advisory_record(jsonb) TO sqlock_execute;
