-- Release (pessimistic mode): deletes this owner's row only, and wakes the name's waiters.
-- true = released; false = nothing of this owner was there (idempotent).
--   SELECT sqlock.release_pessimistic('orders:42', 'owner-token');
CREATE OR REPLACE FUNCTION sqlock.release_pessimistic(p_name text, p_owner text)
  RETURNS boolean
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
-- Since schema version 12 the waiter check of after_release() (00_common.sql) rides on the
-- DELETE: one statement where there were three.
DECLARE
  v_fence  bigint;
  v_holder text;
  v_waited boolean;
BEGIN
  DELETE FROM sqlock.locks l
   WHERE l.name = p_name AND l.owner = p_owner
  RETURNING l.fence, l.holder,
            EXISTS (SELECT 1 FROM sqlock.advisory_waits w
                     WHERE w.name = p_name AND w.until > clock_timestamp())
    INTO v_fence, v_holder, v_waited;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  IF v_waited THEN
    PERFORM sqlock.wake(p_name);
  END IF;
  IF sqlock.audit_on() THEN
    PERFORM sqlock.log_event('release', p_name, p_owner, v_fence, 'pessimistic', v_holder);
  END IF;
  RETURN true;
END
$$;
REVOKE ALL ON FUNCTION sqlock.release_pessimistic(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.release_pessimistic(text, text) TO sqlock_execute;
