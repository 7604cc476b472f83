-- Shared or permit acquire, both row modes: p_kind 'shared', or 'permit' with p_permits (every
-- user of a name must give the same number). One row per hold in sqlock.holders. Refused
-- (NULL, 'busy') while an exclusive hold of the name is live, while a waiting exclusive
-- request's mark is, and for a permit while p_permits holds are live; expired holds and marks
-- never count (server clock). Holds of advisory mode count as well: an exclusive one makes the
-- request busy, shared and permit ones share the name (and its permits). Returns
-- (fence, 'acquired'), (NULL, 'busy'), or (NULL, 'mismatch:<kind>:<permits>') when the name's
-- live holders (of any mode) are of another kind or number of permits (the client raises a
-- configuration error). Idempotent for one owner.
--   SELECT * FROM sqlock.acquire_shared('reports', 'owner-token', 30000, 'host:pid:app',
--                                       'permit', 3, 'pessimistic');
CREATE OR REPLACE FUNCTION sqlock.acquire_shared(p_name text, p_owner text, p_lease_ms bigint,
                                                 p_holder text, p_kind text, p_permits integer,
                                                 p_mode text)
  RETURNS TABLE (fence bigint, status text)
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  v_now     timestamptz := clock_timestamp();
  v_permits integer := CASE WHEN p_kind = 'permit' THEN p_permits ELSE 0 END;
  v_fence   bigint;
  v_other   record;
  v_miss    text;
BEGIN
  PERFORM sqlock.check_name_owner(p_name, p_owner);
  PERFORM sqlock.check_lease(p_lease_ms);
  IF p_kind IS NULL OR p_kind NOT IN ('shared', 'permit') OR (p_kind = 'permit' AND
     coalesce(p_permits, 0) < 1) THEN
    RAISE EXCEPTION 'sqlock: kind must be shared, or permit with permits >= 1 (got %, %)',
      p_kind, p_permits USING ERRCODE = '22023';
  END IF;
  PERFORM sqlock.name_guard(p_name);
  SELECT h.fence INTO v_fence FROM sqlock.holders h
   WHERE h.name = p_name AND h.owner = p_owner AND h.expires_at > v_now;
  IF FOUND THEN
    RETURN QUERY SELECT v_fence, 'acquired'::text;  -- our own hold (a retried call)
    RETURN;
  END IF;
  DELETE FROM sqlock.holders h WHERE h.name = p_name AND h.expires_at <= v_now;
  SELECT h.kind, h.permits INTO v_other FROM sqlock.holders h
   WHERE h.name = p_name AND (h.kind <> p_kind OR h.permits <> v_permits)
   LIMIT 1;
  IF FOUND THEN
    RETURN QUERY SELECT NULL::bigint, 'mismatch:' || v_other.kind || ':' || v_other.permits;
    RETURN;
  END IF;
  -- The name's key in share mode, for this transaction: an exclusive advisory or
  -- transaction-scoped hold makes the request busy; shared and permit holds of advisory mode
  -- share it, and must agree on the kind and count against the permits.
  IF NOT sqlock.name_key_try(p_name, true) THEN
    RETURN QUERY SELECT NULL::bigint,
                        coalesce(sqlock.advisory_mismatch(p_name, p_kind, v_permits), 'busy');
    RETURN;
  END IF;
  v_miss := sqlock.advisory_mismatch(p_name, p_kind, v_permits);
  IF v_miss IS NOT NULL THEN
    RETURN QUERY SELECT NULL::bigint, v_miss;
    RETURN;
  END IF;
  IF EXISTS (SELECT 1 FROM sqlock.locks l
              WHERE l.name = p_name AND l.owner IS NOT NULL AND l.expires_at > v_now)
     OR EXISTS (SELECT 1 FROM sqlock.writer_marks m
                 WHERE m.name = p_name AND m.expires_at > v_now)
     OR (p_kind = 'permit' AND
         (SELECT count(*) FROM sqlock.holders h WHERE h.name = p_name)
           + sqlock.advisory_permits_held(p_name, v_permits) >= v_permits) THEN
    RETURN QUERY SELECT NULL::bigint, 'busy'::text;
    RETURN;
  END IF;
  INSERT INTO sqlock.holders AS h (name, owner, kind, permits, mode, fence, acquired_at,
                                   expires_at, holder, backend_pid, client_addr, application)
  VALUES (p_name, p_owner, p_kind, v_permits, p_mode, sqlock.row_fence(), v_now,
          v_now + p_lease_ms * interval '1 millisecond', coalesce(p_holder, ''),
          pg_backend_pid(), inet_client_addr(),
          coalesce(current_setting('application_name', true), ''))
  RETURNING h.fence INTO v_fence;
  RETURN QUERY SELECT * FROM sqlock.acquire_result(v_fence, 'busy', p_name, p_owner, p_mode,
                                                   p_holder);
END
$$;
REVOKE ALL ON FUNCTION sqlock.acquire_shared(text, text, bigint, text, text, integer, text)
  FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.acquire_shared(text, text, bigint, text, text, integer, text)
  TO sqlock_execute;

-- Release a shared or permit hold: deletes this owner's row only and wakes the name's waiters.
-- true = released; false = nothing of this owner was there (idempotent).
--   SELECT sqlock.release_shared('reports', 'owner-token');
CREATE OR REPLACE FUNCTION sqlock.release_shared(p_name text, p_owner text) RETURNS boolean
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
DECLARE
  v_fence  bigint;
  v_mode   text;
  v_holder text;
BEGIN
  DELETE FROM sqlock.holders h
   WHERE h.name = p_name AND h.owner = p_owner
  RETURNING h.fence, h.mode, h.holder INTO v_fence, v_mode, v_holder;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  PERFORM sqlock.after_release(p_name, p_owner, v_fence, v_mode, v_holder);
  RETURN true;
END
$$;
REVOKE ALL ON FUNCTION sqlock.release_shared(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.release_shared(text, text) TO sqlock_execute;

-- Removes the writer mark of an exclusive acquire() call that ended without the lock, and wakes
-- the readers it kept waiting. true = there was a mark.
--   SELECT sqlock.clear_mark('reports', 'owner-token');
CREATE OR REPLACE FUNCTION sqlock.clear_mark(p_name text, p_owner text) RETURNS boolean
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
BEGIN
  DELETE FROM sqlock.writer_marks m WHERE m.name = p_name AND m.owner = p_owner;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  PERFORM sqlock.wake(p_name);
  RETURN true;
END
$$;
REVOKE ALL ON FUNCTION sqlock.clear_mark(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.clear_mark(text, text) TO sqlock_execute;

-- clear_mark() for many calls at once (schema version 15), in one statement: what a client
-- cancelling many waits sends. p_marks: [{"name": ..., "owner": ...}, ...]. Wakes the readers
-- of each name whose mark was removed; returns how many marks there were.
--   SELECT sqlock.clear_marks('[{"name": "reports", "owner": "owner-token"}]');
CREATE OR REPLACE FUNCTION sqlock.clear_marks(p_marks jsonb) RETURNS integer
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
DECLARE
  v_n integer;
BEGIN
  WITH gone AS (
    DELETE FROM sqlock.writer_marks m
     USING jsonb_to_recordset(coalesce(p_marks, '[]')) AS e(name text, owner text)
     WHERE m.name = e.name AND m.owner = e.owner
    RETURNING m.name)
  SELECT count(*) INTO v_n FROM gone, LATERAL (SELECT sqlock.wake(gone.name)) AS w;
  RETURN v_n;
END
$$;
REVOKE ALL ON FUNCTION sqlock.clear_marks(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.clear_marks(jsonb) TO sqlock_execute;
