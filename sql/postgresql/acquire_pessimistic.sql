-- Pessimistic exclusive acquire: one INSERT of the name; an expired (or free) row is taken over
-- by the same statement (ON CONFLICT ... DO UPDATE ... WHERE expired); refused while a shared or
-- permit hold of the name is live, or while another mode holds it (advisory mode, a
-- transaction-scoped lock: name_key_try in 01_holders.sql). Returns (fence, 'acquired') or (NULL, 'busy'). A busy attempt
-- with p_mark_ms > 0 (a client that will wait) leaves a writer mark that keeps new shared holders
-- out for p_mark_ms (see writer_mark in 01_holders.sql). Idempotent for one owner: a retried
-- call finds its own hold and returns its fence unchanged. Time is the server's
-- clock_timestamp().
--   SELECT * FROM sqlock.acquire_pessimistic('orders:42', 'owner-token', 30000, 'host:pid:app', 0);
CREATE OR REPLACE FUNCTION sqlock.acquire_pessimistic(p_name text, p_owner text,
    p_lease_ms bigint, p_holder text, p_mark_ms bigint)
  RETURNS TABLE (fence bigint, status text)
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  v_now   timestamptz := clock_timestamp();
  v_fence bigint;
BEGIN
  PERFORM sqlock.check_name_owner(p_name, p_owner);
  PERFORM sqlock.check_lease(p_lease_ms);
  -- Every kind's acquire of this name waits here for the others; live shared or permit holds
  -- keep an exclusive request out (and the attempt leaves its writer mark, below).
  PERFORM sqlock.name_guard(p_name);
  -- The name's key, for this transaction: an advisory-mode session or a transaction-scoped
  -- lock holding the name makes the request busy (one name, one lock across modes).
  IF NOT sqlock.name_key_try(p_name, false) THEN
    PERFORM sqlock.key_busy(p_name, p_owner, p_mark_ms);
    RETURN QUERY SELECT NULL::bigint, 'busy'::text;
    RETURN;
  END IF;
  -- Taking over a free or expired row: lock it FOR UPDATE first, which waits for a fenced
  -- transaction of the old holder (fence_check's FOR KEY SHARE) to end. The upsert below alone
  -- would not wait: it updates only non-key columns. Both use v_now, so a row that was live here
  -- is not seen expired below.
  PERFORM 1 FROM sqlock.locks l
    WHERE l.name = p_name AND l.owner IS DISTINCT FROM p_owner
      AND (l.owner IS NULL OR l.expires_at <= v_now)
    FOR UPDATE;
  IF NOT sqlock.shared_held(p_name, v_now) THEN
    INSERT INTO sqlock.locks AS l (name, owner, mode, fence, version, acquired_at, expires_at,
                                   holder, backend_pid, client_addr, application)
    VALUES (p_name, p_owner, 'pessimistic', sqlock.row_fence(), 1, v_now,
            v_now + p_lease_ms * interval '1 millisecond', coalesce(p_holder, ''),
            pg_backend_pid(), inet_client_addr(),
            coalesce(current_setting('application_name', true), ''))
    ON CONFLICT (name) DO UPDATE
       SET owner = excluded.owner,
           mode = excluded.mode,
           fence = CASE WHEN l.owner = excluded.owner THEN l.fence ELSE excluded.fence END,
           version = l.version + 1,
           acquired_at = CASE WHEN l.owner = excluded.owner THEN l.acquired_at
                              ELSE excluded.acquired_at END,
           expires_at = excluded.expires_at,
           holder = excluded.holder,
           backend_pid = excluded.backend_pid,
           client_addr = excluded.client_addr,
           application = excluded.application
     WHERE l.owner IS NULL OR l.owner = excluded.owner OR l.expires_at <= v_now
    RETURNING l.fence INTO v_fence;
  END IF;
  PERFORM sqlock.writer_mark(p_name, p_owner, p_mark_ms, v_fence IS NOT NULL);
  RETURN QUERY SELECT * FROM sqlock.acquire_result(v_fence, 'busy', p_name, p_owner, 'pessimistic',
                                                   p_holder);
END
$$;
REVOKE ALL ON FUNCTION sqlock.acquire_pessimistic(text, text, bigint, text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.acquire_pessimistic(text, text, bigint, text, bigint)
  TO sqlock_execute;

-- The version-1 signature (no writer mark), for clients of earlier versions.
CREATE OR REPLACE FUNCTION sqlock.acquire_pessimistic(p_name text, p_owner text,
    p_lease_ms bigint, p_holder text)
  RETURNS TABLE (fence bigint, status text)
  LANGUAGE sql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
  SELECT * FROM sqlock.acquire_pessimistic(p_name, p_owner, p_lease_ms, p_holder, 0)
$$;
REVOKE ALL ON FUNCTION sqlock.acquire_pessimistic(text, text, bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.acquire_pessimistic(text, text, bigint, text) TO sqlock_execute;
