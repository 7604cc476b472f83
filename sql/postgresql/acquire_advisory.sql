-- Advisory acquire: pg_try_advisory_lock(sqlock.lock_key(name)) held by the calling session
-- until release_advisory() or the end of the session, plus a row in advisory_holds with the
-- owner and a fencing token from the persistent sequence. Returns (fence, 'acquired') or
-- (NULL, 'busy'). The lock is the session's: call renew_advisory/release_advisory on the SAME
-- connection (connection poolers in transaction mode break this; see the docs).
--   SELECT * FROM sqlock.acquire_advisory('orders:42', 'owner-token', 'host:pid:app');
CREATE OR REPLACE FUNCTION sqlock.acquire_advisory(p_name text, p_owner text, p_holder text)
  RETURNS TABLE (fence bigint, status text)
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  v_key   bigint;
  v_new   bigint;
  v_fence bigint;
BEGIN
  PERFORM sqlock.check_name_owner(p_name, p_owner);
  v_key := sqlock.lock_key(p_name);
  IF NOT pg_try_advisory_lock(v_key) THEN
    RETURN QUERY SELECT NULL::bigint, 'busy'::text;
    RETURN;
  END IF;
  -- Session locks ignore rollback: if recording the hold fails, give the lock back.
  BEGIN
    v_new := nextval('sqlock.fence_seq');
    INSERT INTO sqlock.advisory_holds AS h (name, key, owner, fence, backend_pid, acquired_at,
                                            holder, client_addr, application)
    VALUES (p_name, v_key, p_owner, v_new, pg_backend_pid(), clock_timestamp(),
            coalesce(p_holder, ''), inet_client_addr(),
            coalesce(current_setting('application_name', true), ''))
    ON CONFLICT (name) DO UPDATE
       SET key = excluded.key, owner = excluded.owner,
           fence = CASE WHEN h.owner = excluded.owner AND h.backend_pid = excluded.backend_pid
                        THEN h.fence ELSE excluded.fence END,
           backend_pid = excluded.backend_pid, acquired_at = excluded.acquired_at,
           holder = excluded.holder, client_addr = excluded.client_addr,
           application = excluded.application
    RETURNING h.fence INTO v_fence;
  EXCEPTION WHEN OTHERS THEN
    PERFORM pg_advisory_unlock(v_key);
    RAISE;
  END;
  IF v_fence <> v_new THEN
    -- This session already held it for this owner (a retried call): drop the extra level.
    PERFORM pg_advisory_unlock(v_key);
  ELSIF sqlock.audit_on() THEN
    PERFORM sqlock.log_event('acquire', p_name, p_owner, v_fence, 'advisory', p_holder);
  END IF;
  RETURN QUERY SELECT v_fence, 'acquired'::text;
END
$$;
REVOKE ALL ON FUNCTION sqlock.acquire_advisory(text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.acquire_advisory(text, text, text) TO sqlock_execute;
