-- Transaction-scoped locks on the caller's own transaction: pg_advisory_xact_lock on
-- sqlock.lock_key(name), released by COMMIT or ROLLBACK, never explicitly. They share the key
-- space of advisory mode, so a name locked here excludes the same name held in advisory mode.
-- xact_lock waits (bounded by lock_timeout: SET LOCAL lock_timeout = '5s'); try_xact_lock
-- returns false at once when the name is held elsewhere. p_shared takes the shared variant.
--   BEGIN; SELECT sqlock.xact_lock('orders:42'); ...; COMMIT;
CREATE OR REPLACE FUNCTION sqlock.xact_lock(p_name text, p_shared boolean DEFAULT false)
  RETURNS void
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
DECLARE
  v_key bigint := sqlock.checked_key(p_name);
BEGIN
  IF p_shared THEN
    PERFORM pg_advisory_xact_lock_shared(v_key);
  ELSE
    PERFORM pg_advisory_xact_lock(v_key);
  END IF;
END
$$;
REVOKE ALL ON FUNCTION sqlock.xact_lock(text, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.xact_lock(text, boolean) TO sqlock_execute;

CREATE OR REPLACE FUNCTION sqlock.try_xact_lock(p_name text, p_shared boolean DEFAULT false)
  RETURNS boolean
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
DECLARE
  v_key bigint := sqlock.checked_key(p_name);
BEGIN
  IF p_shared THEN
    RETURN pg_try_advisory_xact_lock_shared(v_key);
  END IF;
  RETURN pg_try_advisory_xact_lock(v_key);
END
$$;
REVOKE ALL ON FUNCTION sqlock.try_xact_lock(text, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.try_xact_lock(text, boolean) TO sqlock_execute;
