-- Release (advisory mode), on the holding session: unlocks the advisory lock once when the
-- name's row names this owner and this session; the row stays (stale once unlocked: readers
-- check pg_locks; the next acquire of the name overwrites it), so a release writes nothing.
-- NOTIFY is sent only while a notification-path waiter is registered for the name
-- (advisory_wait_notify, advisory_released); waiters inside the server need none.
-- true = released; false = nothing of this owner was held by this session (idempotent).
--   SELECT sqlock.release_advisory('orders:42', 'owner-token');
CREATE OR REPLACE FUNCTION sqlock.release_advisory(p_name text, p_owner text) RETURNS boolean
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
DECLARE
  v_done   boolean;
  v_fence  bigint;
  v_holder text;
BEGIN
  -- pg_advisory_unlock is false (with a WARNING) when this session did not hold the lock.
  SELECT pg_advisory_unlock(h.key), h.fence, h.holder INTO v_done, v_fence, v_holder
    FROM sqlock.advisory_holds h
   WHERE h.name = p_name AND h.owner = p_owner AND h.backend_pid = pg_backend_pid();
  IF v_done IS NOT TRUE THEN
    RETURN false;
  END IF;
  PERFORM sqlock.advisory_released(p_name, p_owner, v_fence, v_holder);
  RETURN true;
END
$$;
REVOKE ALL ON FUNCTION sqlock.release_advisory(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.release_advisory(text, text) TO sqlock_execute;
