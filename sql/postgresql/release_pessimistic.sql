-- Release (pessimistic mode): deletes this owner's row only, and wakes the name's waiters.
-- true = released; false = nothing of this owner was there (idempotent).
--   SELECT sqlock.release_pessimistic('orders:42', 'owner-token');
CREATE OR REPLACE FUNCTION sqlock.release_pessimistic(p_name text, p_owner text)
  RETURNS boolean
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
DECLARE
  v_fence bigint;
  v_holder text;
BEGIN
  DELETE FROM sqlock.locks l
   WHERE l.name = p_name AND l.owner = p_owner
  RETURNING l.fence, l.holder INTO v_fence, v_holder;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  PERFORM sqlock.after_release(p_name, p_owner, v_fence, 'pessimistic', v_holder);
  RETURN true;
END
$$;
REVOKE ALL ON FUNCTION sqlock.release_pessimistic(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.release_pessimistic(text, text) TO sqlock_execute;
