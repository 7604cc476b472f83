-- Pessimistic exclusive acquire: one INSERT of the name; an expired (or free) row is taken over
-- by the same statement (ON CONFLICT ... DO UPDATE ... WHERE expired); refused while a shared or
-- permit hold of the name is live, or while another mode holds it (advisory mode, a
-- transaction-scoped lock: exclusive_take in 01_holders.sql). Returns (fence, 'acquired') or
-- (NULL, 'busy'). A busy attempt with p_mark_ms > 0 (a client that will wait) leaves a writer
-- mark that keeps new shared holders out for p_mark_ms (see writer_mark in 01_holders.sql).
-- Idempotent for one owner: a retried call finds its own hold and returns its fence unchanged.
-- Time is the server's clock_timestamp().
--   SELECT * FROM sqlock.acquire_pessimistic('orders:42', 'owner-token', 30000, 'host:pid:app', 0);
CREATE OR REPLACE FUNCTION sqlock.acquire_pessimistic(p_name text, p_owner text,
    p_lease_ms bigint, p_holder text, p_mark_ms bigint)
  RETURNS TABLE (fence bigint, status text)
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
#variable_conflict use_column
-- Lean since schema version 12: what were PERFORMs of helpers are expressions or part of the
-- INSERT (each PL/pgSQL statement costs an executor start); the checks and their order are
-- those of before.
DECLARE
  v_now   timestamptz := clock_timestamp();
  v_fence bigint;
BEGIN
  -- The argument checks; every kind's acquire of this name waits for the others on its guard;
  -- then the name's key, for this transaction: an advisory-mode session or a transaction-scoped
  -- lock holding the name makes the request busy (one name, one lock across modes).
  IF NOT sqlock.exclusive_take(p_name, p_owner, p_lease_ms) THEN
    IF coalesce(p_mark_ms, 0) > 0 THEN
      PERFORM sqlock.writer_mark(p_name, p_owner, p_mark_ms, false);
    END IF;
    fence := NULL;
    status := 'busy';
    RETURN NEXT;
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
  -- Live shared or permit holds keep an exclusive request out (no row to insert then).
  INSERT INTO sqlock.locks AS l (name, owner, mode, fence, version, acquired_at, expires_at,
                                 holder, backend_pid, client_addr, application)
  SELECT p_name, p_owner, 'pessimistic', sqlock.row_fence(), 1, v_now,
         v_now + p_lease_ms * interval '1 millisecond', coalesce(p_holder, ''),
         pg_backend_pid(), inet_client_addr(),
         coalesce(current_setting('application_name', true), '')
   WHERE NOT EXISTS (SELECT 1 FROM sqlock.holders h
                      WHERE h.name = p_name AND h.expires_at > v_now)
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
  -- Only a waiting request (p_mark_ms > 0 on every attempt of it) leaves or removes a mark.
  IF coalesce(p_mark_ms, 0) > 0 THEN
    PERFORM sqlock.writer_mark(p_name, p_owner, p_mark_ms, v_fence IS NOT NULL);
  END IF;
  IF v_fence IS NOT NULL AND sqlock.audit_on() THEN
    PERFORM sqlock.log_event('acquire', p_name, p_owner, v_fence, 'pessimistic', p_holder);
  END IF;
  fence := v_fence;
  status := CASE WHEN v_fence IS NULL THEN 'busy' ELSE 'acquired' END;
  RETURN NEXT;
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
