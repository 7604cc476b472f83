-- Release (optimistic mode): frees this owner's row (owner NULL) and moves its version on, so
-- a compare-and-set that read the old version fails; wakes the name's waiters.
-- true = released; false = nothing of this owner was there (idempotent).
--   SELECT sqlock.release_optimistic('orders:42', 'owner-token');
CREATE OR REPLACE FUNCTION sqlock.release_optimistic(p_name text, p_owner text)
  RETURNS boolean
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
-- Since schema version 12 the waiter check of after_release() (00_common.sql) rides on the
-- UPDATE, as in release_pessimistic.
DECLARE
  v_fence  bigint;
  v_waited boolean;
BEGIN
  UPDATE sqlock.locks l
     SET owner = NULL, version = l.version + 1, expires_at = clock_timestamp(), holder = ''
   WHERE l.name = p_name AND l.owner = p_owner
  RETURNING l.fence,
            EXISTS (SELECT 1 FROM sqlock.advisory_waits w
                     WHERE w.name = p_name AND w.until > clock_timestamp())
    INTO v_fence, v_waited;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  IF v_waited THEN
    PERFORM sqlock.wake(p_name);
  END IF;
  IF sqlock.audit_on() THEN
    PERFORM sqlock.log_event('release', p_name, p_owner, v_fence, 'optimistic', NULL);
  END IF;
  RETURN true;
END
$$;
REVOKE ALL ON FUNCTION sqlock.release_optimistic(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.release_optimistic(text, text) TO sqlock_execute;
