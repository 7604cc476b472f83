-- Release (advisory mode), on the holding session: removes this owner's hold row, unlocks the
-- advisory lock once and wakes the name's waiters. true = released; false = nothing of this
-- owner was held by this session (idempotent).
--   SELECT sqlock.release_advisory('orders:42', 'owner-token');
CREATE OR REPLACE FUNCTION sqlock.release_advisory(p_name text, p_owner text) RETURNS boolean
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
DECLARE
  v_key   bigint;
  v_fence bigint;
  v_holder text;
BEGIN
  DELETE FROM sqlock.advisory_holds h
   WHERE h.name = p_name AND h.owner = p_owner AND h.backend_pid = pg_backend_pid()
  RETURNING h.key, h.fence, h.holder INTO v_key, v_fence, v_holder;
  -- pg_advisory_unlock is false (with a WARNING) when this session did not hold the lock.
  IF NOT FOUND OR NOT pg_advisory_unlock(v_key) THEN
    RETURN false;
  END IF;
  PERFORM sqlock.after_release(p_name, p_owner, v_fence, 'advisory', v_holder);
  RETURN true;
END
$$;
REVOKE ALL ON FUNCTION sqlock.release_advisory(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.release_advisory(text, text) TO sqlock_execute;
