-- Transaction-scoped locks on the caller's own transaction: pg_advisory_xact_lock on
-- sqlock.lock_key(name), released by COMMIT or ROLLBACK, never explicitly. They share the key
-- of advisory mode, so a name locked here excludes the same name held in advisory mode, and the
-- row modes' acquires take that key for their own transaction (name_key_try), so they exclude
-- each other too: a name a row mode holds (a live row, rows_hold) is not granted here. The key
-- taken in that case is given back at once (it was taken in a subtransaction, rolled back).
-- xact_lock waits (bounded by lock_timeout: SET LOCAL lock_timeout = '5s'; for a row mode's
-- hold it looks again every 5 to 100 ms until then, and raises lock_not_available, 55P03, as a
-- lock timeout does); try_xact_lock returns false at once when the name is held elsewhere.
-- p_shared takes the shared variant (which a row mode's shared or permit hold does not refuse).
--   BEGIN; SELECT sqlock.xact_lock('orders:42'); ...; COMMIT;

-- One try: true = the calling transaction holds the key of p_name (in share mode when p_shared)
-- and no row mode holds the name; false = nothing taken.
CREATE OR REPLACE FUNCTION sqlock.xact_key_try(p_name text, p_key bigint, p_shared boolean)
  RETURNS boolean
  LANGUAGE plpgsql VOLATILE
  SET search_path = sqlock, pg_temp
AS $$
BEGIN
  BEGIN
    IF p_shared THEN
      IF NOT pg_try_advisory_xact_lock_shared(p_key) THEN
        RETURN false;
      END IF;
    ELSIF NOT pg_try_advisory_xact_lock(p_key) THEN
      RETURN false;
    END IF;
    IF sqlock.rows_hold(p_name, NOT p_shared) THEN
      -- Rolls the subtransaction back, and with it the key it took.
      RAISE EXCEPTION USING ERRCODE = 'SQLK1';
    END IF;
    RETURN true;
  EXCEPTION WHEN SQLSTATE 'SQLK1' THEN
    RETURN false;
  END;
END
$$;
REVOKE ALL ON FUNCTION sqlock.xact_key_try(text, bigint, boolean) FROM PUBLIC;

CREATE OR REPLACE FUNCTION sqlock.xact_lock(p_name text, p_shared boolean DEFAULT false)
  RETURNS void
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
DECLARE
  v_key     bigint := sqlock.checked_key(p_name);
  v_timeout interval := pg_catalog.current_setting('lock_timeout')::interval;
  v_until   timestamptz := clock_timestamp() + v_timeout;
  v_pause   bigint := 5;
BEGIN
  LOOP
    BEGIN
      -- Waits for the key (lock_timeout raises lock_not_available, 55P03, to the caller).
      IF p_shared THEN
        PERFORM pg_advisory_xact_lock_shared(v_key);
      ELSE
        PERFORM pg_advisory_xact_lock(v_key);
      END IF;
      IF NOT sqlock.rows_hold(p_name, NOT p_shared) THEN
        RETURN;
      END IF;
      RAISE EXCEPTION USING ERRCODE = 'SQLK1';  -- gives the key back (the subtransaction's)
    EXCEPTION WHEN SQLSTATE 'SQLK1' THEN
      NULL;
    END;
    IF v_timeout > interval '0' AND clock_timestamp() >= v_until THEN
      RAISE EXCEPTION 'sqlock: canceling statement due to lock timeout (% is held in a row mode)',
        p_name USING ERRCODE = 'lock_not_available';
    END IF;
    PERFORM pg_catalog.set_config('client_connection_check_interval', '100ms', true);
    PERFORM pg_catalog.pg_sleep(v_pause / 1000.0);
    v_pause := least(v_pause * 2, 100);
  END LOOP;
END
$$;
REVOKE ALL ON FUNCTION sqlock.xact_lock(text, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.xact_lock(text, boolean) TO sqlock_execute;

CREATE OR REPLACE FUNCTION sqlock.try_xact_lock(p_name text, p_shared boolean DEFAULT false)
  RETURNS boolean
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
BEGIN
  RETURN sqlock.xact_key_try(p_name, sqlock.checked_key(p_name), p_shared);
END
$$;
REVOKE ALL ON FUNCTION sqlock.try_xact_lock(text, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.try_xact_lock(text, boolean) TO sqlock_execute;
