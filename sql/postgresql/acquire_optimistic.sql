-- Optimistic acquire: read the name's row, then compare-and-set its version. Returns
-- (fence, 'acquired'), (NULL, 'busy') when a live hold exists, or (NULL, 'retry') when another
-- session changed the row between the read and the write (the client retries with capped,
-- jittered backoff). A free (released) or expired row can be claimed. Idempotent for one owner.
--   SELECT * FROM sqlock.acquire_optimistic('orders:42', 'owner-token', 30000, 'host:pid:app');
CREATE OR REPLACE FUNCTION sqlock.acquire_optimistic(p_name text, p_owner text,
                                                     p_lease_ms bigint, p_holder text)
  RETURNS TABLE (fence bigint, status text)
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  v_row   record;
  v_now   timestamptz := clock_timestamp();
  v_fence bigint;
BEGIN
  PERFORM sqlock.check_name_owner(p_name, p_owner);
  PERFORM sqlock.check_lease(p_lease_ms);
  SELECT l.owner, l.version, l.fence, l.expires_at INTO v_row
    FROM sqlock.locks l WHERE l.name = p_name;
  IF NOT FOUND THEN
    -- First use of the name: the insert is the compare-and-set against "no row".
    INSERT INTO sqlock.locks AS l (name, owner, mode, fence, version, acquired_at, expires_at,
                                   holder, backend_pid, client_addr, application)
    VALUES (p_name, p_owner, 'optimistic', nextval('sqlock.fence_seq'), 1, v_now,
            v_now + p_lease_ms * interval '1 millisecond', coalesce(p_holder, ''),
            pg_backend_pid(), inet_client_addr(),
            coalesce(current_setting('application_name', true), ''))
    ON CONFLICT (name) DO NOTHING
    RETURNING l.fence INTO v_fence;
  ELSIF v_row.owner = p_owner AND v_row.expires_at > v_now THEN
    RETURN QUERY SELECT v_row.fence, 'acquired'::text;  -- our own hold (a retried call)
    RETURN;
  ELSIF v_row.owner IS NOT NULL AND v_row.expires_at > v_now THEN
    RETURN QUERY SELECT NULL::bigint, 'busy'::text;
    RETURN;
  ELSE
    -- Free or expired: claim it if nobody moved the version since we read it. FOR UPDATE first
    -- waits for a fenced transaction of the old holder (fence_check's FOR KEY SHARE), which the
    -- UPDATE of non-key columns alone would not.
    PERFORM 1 FROM sqlock.locks l WHERE l.name = p_name AND l.version = v_row.version FOR UPDATE;
    UPDATE sqlock.locks l
       SET owner = p_owner, mode = 'optimistic', fence = nextval('sqlock.fence_seq'),
           version = l.version + 1, acquired_at = v_now,
           expires_at = v_now + p_lease_ms * interval '1 millisecond',
           holder = coalesce(p_holder, ''), backend_pid = pg_backend_pid(),
           client_addr = inet_client_addr(),
           application = coalesce(current_setting('application_name', true), '')
     WHERE l.name = p_name AND l.version = v_row.version
    RETURNING l.fence INTO v_fence;
  END IF;
  RETURN QUERY SELECT * FROM sqlock.acquire_result(v_fence, 'retry', p_name, p_owner, 'optimistic',
                                                   p_holder);
END
$$;
REVOKE ALL ON FUNCTION sqlock.acquire_optimistic(text, text, bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.acquire_optimistic(text, text, bigint, text) TO sqlock_execute;
