-- true when p_fence is the fencing token of a current live hold of p_name (any mode and kind). Call it
-- inside the transaction that does the protected write: on success it also takes a FOR KEY
-- SHARE row lock on the hold, so no new holder can take the lock over (a takeover locks the row
-- FOR UPDATE first) and nobody can release or sweep it until that transaction ends, while the
-- holder's own renewals (which update only non-key columns) go on: a fenced transaction longer
-- than the lease does not cost the holder its lock.
--   BEGIN;
--   UPDATE orders SET status = 'paid' WHERE id = 42 AND sqlock.fence_check('orders:42', 1017);
--   -- 0 rows updated = a stale holder: roll back
--   COMMIT;
CREATE OR REPLACE FUNCTION sqlock.fence_check(p_name text, p_fence bigint) RETURNS boolean
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
BEGIN
  PERFORM 1 FROM sqlock.locks l
    WHERE l.name = p_name AND l.fence = p_fence AND l.owner IS NOT NULL
      AND l.expires_at > clock_timestamp()
    FOR KEY SHARE;
  IF FOUND THEN
    RETURN true;
  END IF;
  -- A shared or permit hold: its row locked FOR KEY SHARE keeps release and sweep waiting.
  PERFORM 1 FROM sqlock.holders h
    WHERE h.name = p_name AND h.fence = p_fence AND h.expires_at > clock_timestamp()
    FOR KEY SHARE;
  IF FOUND THEN
    RETURN true;
  END IF;
  PERFORM 1 FROM sqlock.advisory_holds h
    WHERE h.name = p_name AND h.fence = p_fence AND sqlock.advisory_held(h.key, h.backend_pid)
    FOR SHARE;
  IF FOUND THEN
    RETURN true;
  END IF;
  PERFORM 1 FROM sqlock.advisory_shared h
    WHERE h.name = p_name AND h.fence = p_fence AND h.owner IS NOT NULL
      AND sqlock.advisory_held_as(h.key, h.backend_pid, h.lock_mode)
    FOR SHARE;
  IF FOUND THEN
    RETURN true;
  END IF;
  -- An exclusive advisory hold the library took with advisory_lock() (advisory_session.sql),
  -- recorded or not: its session holds the name's key and the fence's int4 pair. Last: it reads
  -- all of pg_locks, which the row lookups above do only for a row that matches.
  RETURN p_fence > 0 AND sqlock.advisory_fence_held(p_name, p_fence);
END
$$;
REVOKE ALL ON FUNCTION sqlock.fence_check(text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.fence_check(text, bigint) TO sqlock_execute;
