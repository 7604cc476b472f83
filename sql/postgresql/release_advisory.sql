-- Release (advisory mode), on the holding session: unlocks the advisory lock once when the
-- name's row names this owner and this session; the row stays (stale once unlocked: readers
-- check pg_locks; the next acquire of the name overwrites it), so a release writes nothing.
-- NOTIFY is sent only while a notification-path waiter is registered for the name
-- (advisory_wait_notify); waiters inside the server need none.
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
  -- sqlock.advisory_released() inline (a nested call with its own search_path costs a settings
  -- switch on every release). The look for registered waiters is a statement of its own, after the
  -- unlock: its snapshot then includes every registration made before the unlock, so a waiter
  -- that registered and then found the lock busy is always woken.
  PERFORM 1 FROM sqlock.advisory_waits w WHERE w.name = p_name AND w.until > clock_timestamp();
  IF FOUND THEN
    PERFORM sqlock.wake(p_name);
  END IF;
  IF sqlock.audit_on() THEN
    PERFORM sqlock.log_event('release', p_name, p_owner, v_fence, 'advisory', v_holder);
  END IF;
  RETURN true;
END
$$;
REVOKE ALL ON FUNCTION sqlock.release_advisory(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.release_advisory(text, text) TO sqlock_execute;
