-- Deletes up to p_limit dead rows: expired or free rows of sqlock.locks, expired shared and
-- permit holds of sqlock.holders (and expired writer marks), and advisory hold rows (exclusive,
-- shared and permit) that are free or whose session no longer holds the lock. Returns how many. Safe to run
-- concurrently (SKIP LOCKED) and from pg_cron; call it again while it returns p_limit:
--   SELECT cron.schedule('sqlock-sweep', '* * * * *', 'SELECT sqlock.sweep(10000)');
-- Waiters of expired holds are woken; stale advisory wait registrations and rows of waiting
-- requests (sqlock.waiting_requests) are deleted. A sweep that
-- deleted something is written to events.
CREATE OR REPLACE FUNCTION sqlock.sweep(p_limit integer DEFAULT 1000) RETURNS integer
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
DECLARE
  r       record;
  v_locks integer := 0;
  v_holds integer := 0;
  v_shared integer := 0;
BEGIN
  IF p_limit IS NULL OR p_limit <= 0 THEN
    RAISE EXCEPTION 'sqlock: sweep limit must be > 0 (got %)', p_limit USING ERRCODE = '22023';
  END IF;
  FOR r IN
    WITH doomed AS (
      SELECT l.name FROM sqlock.locks l
       WHERE l.owner IS NULL OR l.expires_at <= clock_timestamp()
       ORDER BY l.expires_at
       LIMIT p_limit
         FOR UPDATE SKIP LOCKED)
    DELETE FROM sqlock.locks l USING doomed d
     WHERE l.name = d.name AND (l.owner IS NULL OR l.expires_at <= clock_timestamp())
    RETURNING l.name, l.owner
  LOOP
    v_locks := v_locks + 1;
    IF r.owner IS NOT NULL THEN
      PERFORM sqlock.wake(r.name);
    END IF;
  END LOOP;
  -- Expired shared and permit holds (their names' waiters are woken), and writer marks.
  IF v_locks < p_limit THEN
    FOR r IN
      WITH doomed AS (
        SELECT h.name, h.owner FROM sqlock.holders h
         WHERE h.expires_at <= clock_timestamp()
         ORDER BY h.expires_at
         LIMIT p_limit - v_locks
           FOR UPDATE SKIP LOCKED)
      DELETE FROM sqlock.holders h USING doomed d
       WHERE h.name = d.name AND h.owner = d.owner AND h.expires_at <= clock_timestamp()
      RETURNING h.name
    LOOP
      v_locks := v_locks + 1;
      PERFORM sqlock.wake(r.name);
    END LOOP;
  END IF;
  DELETE FROM sqlock.writer_marks m WHERE m.expires_at <= clock_timestamp();
  IF v_locks < p_limit THEN
    WITH doomed AS (
      SELECT h.name FROM sqlock.advisory_holds h
       WHERE NOT sqlock.advisory_held(h.key, h.backend_pid)
       LIMIT p_limit - v_locks
         FOR UPDATE SKIP LOCKED)
    DELETE FROM sqlock.advisory_holds h USING doomed d
     WHERE h.name = d.name AND NOT sqlock.advisory_held(h.key, h.backend_pid);
    GET DIAGNOSTICS v_holds = ROW_COUNT;
  END IF;
  IF v_locks + v_holds < p_limit THEN
    WITH doomed AS (
      SELECT h.name, h.backend_pid FROM sqlock.advisory_shared h
       WHERE h.owner IS NULL OR NOT sqlock.advisory_held_as(h.key, h.backend_pid, h.lock_mode)
       LIMIT p_limit - v_locks - v_holds
         FOR UPDATE SKIP LOCKED)
    DELETE FROM sqlock.advisory_shared h USING doomed d
     WHERE h.name = d.name AND h.backend_pid = d.backend_pid
       AND (h.owner IS NULL OR NOT sqlock.advisory_held_as(h.key, h.backend_pid, h.lock_mode));
    GET DIAGNOSTICS v_shared = ROW_COUNT;
    v_holds := v_holds + v_shared;
  END IF;
  -- Registrations of notification-path waiters past their deadline.
  DELETE FROM sqlock.advisory_waits w WHERE w.until < clock_timestamp();
  -- Rows of waiting requests whose client stopped writing them (sqlock.record_waits).
  DELETE FROM sqlock.waiting_requests w WHERE w.until < clock_timestamp();
  IF v_locks + v_holds > 0 THEN
    PERFORM sqlock.log_event('sweep', NULL, NULL, NULL, NULL, NULL,
                             v_locks || ' lock rows, ' || v_holds || ' advisory rows');
  END IF;
  RETURN v_locks + v_holds;
END
$$;
REVOKE ALL ON FUNCTION sqlock.sweep(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.sweep(integer) TO sqlock_execute;
