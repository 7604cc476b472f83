-- (sqlock.advisory_fence(), the fencing token of an advisory hold, is in fence_epoch.sql with
-- the other modes' tokens.)

-- Registers a waiter of p_name on the notification path for p_ms milliseconds: until then every
-- release of p_name sends NOTIFY (releases of names nobody registered for send none). Called by
-- waiters that do not wait inside the server, before their next attempt.
--   SELECT sqlock.advisory_wait_notify('orders:42', 30000);
CREATE OR REPLACE FUNCTION sqlock.advisory_wait_notify(p_name text, p_ms bigint) RETURNS void
  LANGUAGE sql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
  INSERT INTO sqlock.advisory_waits AS w (name, until)
  VALUES (p_name, clock_timestamp() + least(greatest(p_ms, 0), 3600000) * interval '1 ms')
  ON CONFLICT (name) DO UPDATE SET until = greatest(w.until, excluded.until)
$$;
REVOKE ALL ON FUNCTION sqlock.advisory_wait_notify(text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.advisory_wait_notify(text, bigint) TO sqlock_execute;
