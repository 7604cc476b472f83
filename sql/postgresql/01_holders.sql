-- Helpers of the shared and permit holds (row modes), used by the acquire functions of every
-- kind. Installed after 00_common.sql (files run in name order).

-- Serializes the acquires of one name, of every kind, until the calling transaction ends: a
-- transaction-level advisory lock in the two-key space (class 1397836875 = 'SQLK', key =
-- hashtext(name)), apart from the one-key space of advisory mode and xact_lock(). Held for the
-- few statements of one acquire; two names sharing a hash only wait for each other that long.
--   SELECT * FROM pg_locks WHERE locktype = 'advisory' AND classid = 1397836875;
CREATE OR REPLACE FUNCTION sqlock.name_guard(p_name text) RETURNS void
  LANGUAGE sql VOLATILE
AS $$
  SELECT pg_catalog.pg_advisory_xact_lock(1397836875, pg_catalog.hashtext(p_name))
$$;
REVOKE ALL ON FUNCTION sqlock.name_guard(text) FROM PUBLIC;

-- True when a shared or permit hold of the name is live at p_now (call under name_guard).
-- PL/pgSQL, not SQL: a SQL function with a sub-select is never inlined, and the executor plans
-- it again on every call (80 us of a lock+unlock pair, measured); PL/pgSQL keeps its plan. The
-- helpers here take no SET search_path: only the lock functions call them, under their own.
CREATE OR REPLACE FUNCTION sqlock.shared_held(p_name text, p_now timestamptz) RETURNS boolean
  LANGUAGE plpgsql STABLE
AS $$
BEGIN
  RETURN EXISTS (SELECT 1 FROM sqlock.holders h WHERE h.name = p_name AND h.expires_at > p_now);
END
$$;
REVOKE ALL ON FUNCTION sqlock.shared_held(text, timestamptz) FROM PUBLIC;

-- The end of an exclusive acquire attempt (call under name_guard): acquired = remove this
-- request's writer mark; busy inside a waiting acquire() call (p_mark_ms > 0) = leave the mark,
-- or move this request's own mark on, unless another waiting writer's live mark is there.
CREATE OR REPLACE FUNCTION sqlock.writer_mark(p_name text, p_owner text, p_mark_ms bigint,
                                              p_acquired boolean) RETURNS void
  LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
  IF p_acquired THEN
    -- Only a waiting request (p_mark_ms > 0 on every attempt of it) can have left a mark.
    IF coalesce(p_mark_ms, 0) > 0 THEN
      DELETE FROM sqlock.writer_marks m WHERE m.name = p_name AND m.owner = p_owner;
    END IF;
  ELSIF coalesce(p_mark_ms, 0) > 0 THEN
    INSERT INTO sqlock.writer_marks AS m (name, owner, expires_at)
    VALUES (p_name, p_owner, clock_timestamp() + p_mark_ms * interval '1 millisecond')
    ON CONFLICT (name) DO UPDATE
       SET owner = excluded.owner, expires_at = excluded.expires_at
     WHERE m.owner = excluded.owner OR m.expires_at <= clock_timestamp();
  END IF;
END
$$;
REVOKE ALL ON FUNCTION sqlock.writer_mark(text, text, bigint, boolean) FROM PUBLIC;

-- One name, one lock across modes (schema version 10). Every mode of a name meets on its key
-- sqlock.lock_key(name): advisory mode holds it on its session, transaction-scoped locks on the
-- caller's transaction, and each row-mode acquire takes it for its own transaction, here, after
-- name_guard: exclusively for an exclusive request, shared for a shared or permit one. False =
-- an advisory-mode session or a transaction-scoped lock has the name (the acquire is busy).
-- The row-mode transaction commits its row before it lets the key go (PostgreSQL makes a
-- commit visible before it releases the transaction's locks), so an advisory acquire that gets
-- the key afterwards sees the row (rows_hold, below).
CREATE OR REPLACE FUNCTION sqlock.name_key_try(p_name text, p_shared boolean) RETURNS boolean
  LANGUAGE sql VOLATILE
AS $$
  SELECT CASE WHEN p_shared
              THEN pg_catalog.pg_try_advisory_xact_lock_shared(sqlock.lock_key(p_name))
              ELSE pg_catalog.pg_try_advisory_xact_lock(sqlock.lock_key(p_name)) END
$$;
REVOKE ALL ON FUNCTION sqlock.name_key_try(text, boolean) FROM PUBLIC;

-- name_guard and then name_key_try, as one expression: a PL/pgSQL caller evaluates it without
-- a statement of its own (schema version 12; a PERFORM is a query). NULL never: the CASE waits
-- for the guard (pg_advisory_xact_lock returns void, never NULL) before it tries the key.
CREATE OR REPLACE FUNCTION sqlock.name_take(p_name text, p_shared boolean) RETURNS boolean
  LANGUAGE sql VOLATILE
AS $$
  SELECT CASE WHEN pg_catalog.pg_advisory_xact_lock(1397836875, pg_catalog.hashtext(p_name))
                   IS NULL THEN NULL
              WHEN p_shared
              THEN pg_catalog.pg_try_advisory_xact_lock_shared(sqlock.lock_key(p_name))
              ELSE pg_catalog.pg_try_advisory_xact_lock(sqlock.lock_key(p_name)) END
$$;
REVOKE ALL ON FUNCTION sqlock.name_take(text, boolean) FROM PUBLIC;

-- The start of a row-mode exclusive acquire (schema version 12), evaluated by the caller as an
-- expression: the argument checks (those of check_name_owner and check_lease), then
-- name_take(p_name, false). False = another mode holds the name (the acquire is busy).
CREATE OR REPLACE FUNCTION sqlock.exclusive_take(p_name text, p_owner text, p_lease_ms bigint)
  RETURNS boolean
  LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
  IF coalesce(p_name, '') = '' OR coalesce(p_owner, '') = '' THEN
    RAISE EXCEPTION 'sqlock: lock name and owner must not be empty' USING ERRCODE = '22023';
  END IF;
  IF p_lease_ms IS NULL OR p_lease_ms <= 0 THEN
    RAISE EXCEPTION 'sqlock: lease must be > 0 ms (got %)', p_lease_ms USING ERRCODE = '22023';
  END IF;
  RETURN sqlock.name_take(p_name, false);
END
$$;
REVOKE ALL ON FUNCTION sqlock.exclusive_take(text, text, bigint) FROM PUBLIC;

-- The other half, for the modes that hold the key itself (advisory, transaction-scoped): true
-- when a row mode holds p_name now, so that a caller that just got the key must give it back.
-- p_exclusive: the caller wants the name exclusively, so live shared and permit holds count too;
-- else only a live exclusive hold does. An exclusive row whose lease ran out no longer holds the
-- name, but a fenced transaction of its holder may still be writing under it (fence_check's FOR
-- KEY SHARE row lock): as the row modes' takeover does, such a row is waited for (true), and one
-- nobody locks is freed (owner NULL) so that later calls take the fast path again. Expired shared
-- and permit rows nobody locks are deleted, as acquire_shared does. Call with the key held.
CREATE OR REPLACE FUNCTION sqlock.rows_hold(p_name text, p_exclusive boolean) RETURNS boolean
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
  v_now timestamptz := clock_timestamp();
BEGIN
  IF EXISTS (SELECT 1 FROM sqlock.locks l
              WHERE l.name = p_name AND l.owner IS NOT NULL AND l.expires_at > v_now)
     OR (p_exclusive AND EXISTS (SELECT 1 FROM sqlock.holders h
                                  WHERE h.name = p_name AND h.expires_at > v_now)) THEN
    RETURN true;
  END IF;
  IF EXISTS (SELECT 1 FROM sqlock.locks l WHERE l.name = p_name AND l.owner IS NOT NULL) THEN
    UPDATE sqlock.locks l SET owner = NULL
     WHERE l.name = (SELECT k.name FROM sqlock.locks k
                      WHERE k.name = p_name AND k.owner IS NOT NULL AND k.expires_at <= v_now
                      FOR UPDATE SKIP LOCKED);
    IF NOT FOUND THEN
      RETURN true;  -- a fenced transaction of the expired holder is still running
    END IF;
  END IF;
  IF p_exclusive THEN
    DELETE FROM sqlock.holders h
     WHERE (h.name, h.owner) IN (SELECT k.name, k.owner FROM sqlock.holders k
                                  WHERE k.name = p_name AND k.expires_at <= v_now
                                  FOR UPDATE SKIP LOCKED);
  END IF;
  RETURN false;
END
$$;
REVOKE ALL ON FUNCTION sqlock.rows_hold(text, boolean) FROM PUBLIC;

-- Takes the session-level advisory lock p_key of p_name (shared when p_shared) for the advisory
-- acquires that wait: waits in the server's lock queue for at most p_wait_ms in all, and when
-- the lock comes while a row mode holds the name (rows_hold), gives it back and tries again
-- after a pause (5 ms doubling to 100 ms; a row-mode release sends no signal this session could
-- wait on). true = the session holds p_key and no row mode holds the name; false = the time ran
-- out (the session holds nothing more than before).
CREATE OR REPLACE FUNCTION sqlock.advisory_take(p_key bigint, p_name text, p_shared boolean,
                                                p_wait_ms bigint)
  RETURNS boolean
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
  v_until timestamptz := clock_timestamp() + greatest(p_wait_ms, 0) * interval '1 ms';
  v_left  bigint;
  v_pause bigint := 5;
BEGIN
  LOOP
    v_left := floor(extract(epoch FROM v_until - clock_timestamp()) * 1000)::bigint;
    IF v_left <= 0 THEN
      RETURN false;
    END IF;
    IF p_shared THEN
      IF NOT pg_catalog.pg_try_advisory_lock_shared(p_key)
         AND NOT sqlock.advisory_wait(p_key, true, v_left) THEN
        RETURN false;
      END IF;
    ELSIF NOT pg_catalog.pg_try_advisory_lock(p_key)
          AND NOT sqlock.advisory_wait(p_key, false, v_left) THEN
      RETURN false;
    END IF;
    IF NOT sqlock.rows_hold(p_name, NOT p_shared) THEN
      RETURN true;
    END IF;
    IF p_shared THEN
      PERFORM pg_catalog.pg_advisory_unlock_shared(p_key);
    ELSE
      PERFORM pg_catalog.pg_advisory_unlock(p_key);
    END IF;
    PERFORM pg_catalog.set_config('client_connection_check_interval', '100ms', true);
    v_left := floor(extract(epoch FROM v_until - clock_timestamp()) * 1000)::bigint;
    PERFORM pg_catalog.pg_sleep(greatest(least(v_left, v_pause), 0) / 1000.0);
    v_pause := least(v_pause * 2, 100);
  END LOOP;
END
$$;
REVOKE ALL ON FUNCTION sqlock.advisory_take(bigint, text, boolean, bigint) FROM PUBLIC;

-- The end of a row-mode exclusive attempt that another mode's hold of the key made busy: the
-- writer mark as for any busy attempt. A client that will wait registers as a waiter of the
-- name itself before its next attempt (advisory_wait_notify, schema version 11), so the
-- advisory release wakes it; this routine need not write that row on every busy attempt.
CREATE OR REPLACE FUNCTION sqlock.key_busy(p_name text, p_owner text, p_mark_ms bigint)
  RETURNS void
  LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
  PERFORM sqlock.writer_mark(p_name, p_owner, p_mark_ms, false);
END
$$;
REVOKE ALL ON FUNCTION sqlock.key_busy(text, text, bigint) FROM PUBLIC;
