-- Optimistic acquire: read the name's row, then compare-and-set its version. Returns
-- (fence, 'acquired'), (NULL, 'busy') when a live hold exists, or (NULL, 'retry') when another
-- session changed the row between the read and the write (the client retries with capped,
-- jittered backoff). A free (released) or expired row can be claimed, not while a shared or
-- permit hold of the name is live, nor while another mode holds it (name_key_try). Idempotent
-- for one owner. A busy attempt with p_mark_ms > 0 leaves a writer mark (see writer_mark in
-- 01_holders.sql). The acquires of one name, of every kind, pass name_guard one at a time, so
-- the compare-and-set loses only to clients of earlier versions.
--   SELECT * FROM sqlock.acquire_optimistic('orders:42', 'owner-token', 30000, 'host:pid:app', 0);
CREATE OR REPLACE FUNCTION sqlock.acquire_optimistic(p_name text, p_owner text,
    p_lease_ms bigint, p_holder text, p_mark_ms bigint)
  RETURNS TABLE (fence bigint, status text)
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
#variable_conflict use_column
-- Since schema version 12 the argument checks, the name's guard and key (exclusive_take) and
-- the result are expressions, not statements of their own (as acquire_pessimistic).
DECLARE
  v_row   record;
  v_now   timestamptz := clock_timestamp();
  v_fence bigint;
BEGIN
  -- The argument checks; every kind's acquire of this name waits for the others on its guard;
  -- live shared or permit holds keep an exclusive request out (and the attempt leaves its writer
  -- mark, below). Then the name's key, for this transaction: busy while another mode holds it.
  IF NOT sqlock.exclusive_take(p_name, p_owner, p_lease_ms) THEN
    PERFORM sqlock.key_busy(p_name, p_owner, p_mark_ms);
    RETURN QUERY SELECT NULL::bigint, 'busy'::text;
    RETURN;
  END IF;
  IF sqlock.shared_held(p_name, v_now) THEN
    PERFORM sqlock.writer_mark(p_name, p_owner, p_mark_ms, false);
    RETURN QUERY SELECT NULL::bigint, 'busy'::text;
    RETURN;
  END IF;
  SELECT l.owner, l.version, l.fence, l.expires_at INTO v_row
    FROM sqlock.locks l WHERE l.name = p_name;
  IF NOT FOUND THEN
    -- First use of the name: the insert is the compare-and-set against "no row".
    INSERT INTO sqlock.locks AS l (name, owner, mode, fence, version, acquired_at, expires_at,
                                   holder, backend_pid, client_addr, application)
    VALUES (p_name, p_owner, 'optimistic', sqlock.row_fence(), 1, v_now,
            v_now + p_lease_ms * interval '1 millisecond', coalesce(p_holder, ''),
            pg_backend_pid(), inet_client_addr(),
            coalesce(current_setting('application_name', true), ''))
    ON CONFLICT (name) DO NOTHING
    RETURNING l.fence INTO v_fence;
  ELSIF v_row.owner = p_owner AND v_row.expires_at > v_now THEN
    RETURN QUERY SELECT v_row.fence, 'acquired'::text;  -- our own hold (a retried call)
    RETURN;
  ELSIF v_row.owner IS NOT NULL AND v_row.expires_at > v_now THEN
    PERFORM sqlock.writer_mark(p_name, p_owner, p_mark_ms, false);
    RETURN QUERY SELECT NULL::bigint, 'busy'::text;
    RETURN;
  ELSE
    -- Free or expired: claim it if nobody moved the version since we read it. FOR UPDATE first
    -- waits for a fenced transaction of the old holder (fence_check's FOR KEY SHARE), which the
    -- UPDATE of non-key columns alone would not.
    PERFORM 1 FROM sqlock.locks l WHERE l.name = p_name AND l.version = v_row.version FOR UPDATE;
    UPDATE sqlock.locks l
       SET owner = p_owner, mode = 'optimistic', fence = sqlock.row_fence(),
           version = l.version + 1, acquired_at = v_now,
           expires_at = v_now + p_lease_ms * interval '1 millisecond',
           holder = coalesce(p_holder, ''), backend_pid = pg_backend_pid(),
           client_addr = inet_client_addr(),
           application = coalesce(current_setting('application_name', true), '')
     WHERE l.name = p_name AND l.version = v_row.version
    RETURNING l.fence INTO v_fence;
  END IF;
  IF coalesce(p_mark_ms, 0) > 0 THEN  -- only a waiting request leaves or removes a mark
    PERFORM sqlock.writer_mark(p_name, p_owner, p_mark_ms, v_fence IS NOT NULL);
  END IF;
  IF v_fence IS NOT NULL AND sqlock.audit_on() THEN
    PERFORM sqlock.log_event('acquire', p_name, p_owner, v_fence, 'optimistic', p_holder);
  END IF;
  fence := v_fence;
  status := CASE WHEN v_fence IS NULL THEN 'retry' ELSE 'acquired' END;
  RETURN NEXT;
END
$$;
REVOKE ALL ON FUNCTION sqlock.acquire_optimistic(text, text, bigint, text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.acquire_optimistic(text, text, bigint, text, bigint)
  TO sqlock_execute;

-- The version-1 signature (no writer mark), for clients of earlier versions.
CREATE OR REPLACE FUNCTION sqlock.acquire_optimistic(p_name text, p_owner text,
    p_lease_ms bigint, p_holder text)
  RETURNS TABLE (fence bigint, status text)
  LANGUAGE sql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
  SELECT * FROM sqlock.acquire_optimistic(p_name, p_owner, p_lease_ms, p_holder, 0)
$$;
REVOKE ALL ON FUNCTION sqlock.acquire_optimistic(text, text, bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.acquire_optimistic(text, text, bigint, text) TO sqlock_execute;
