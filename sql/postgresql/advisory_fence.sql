-- The fencing token of a new advisory hold: (epoch << 44) | n, n from the UNLOGGED sequence
-- sqlock.advisory_fence_seq (no WAL, so no durable write per hold). The epoch is read from the
-- UNLOGGED row sqlock.fence_epoch_live; when that row is missing (after a crash or a replica's
-- promotion the server empties UNLOGGED tables and resets the sequence; also the very first
-- call after migration V004), the durable epoch in sqlock.fence_epoch rises by one and is copied
-- there (sqlock.fence_epoch_now(), fence_epoch.sql). Tokens therefore strictly rise across
-- clean restarts and crashes alike, provided the epoch's commit is durable (synchronous_commit
-- on). See docs/backends/postgres.md for what a
-- failover to an asynchronous replica does to them.
--   SELECT sqlock.advisory_fence();
-- (No SET search_path: every name in it is schema-qualified; acquire_advisory inlines its
-- common case, the two SELECTs at the top.)
CREATE OR REPLACE FUNCTION sqlock.advisory_fence() RETURNS bigint
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
  v_n bigint := pg_catalog.nextval('sqlock.advisory_fence_seq');
BEGIN
  RETURN sqlock.epoch_fence(sqlock.fence_epoch_now(), v_n, 'advisory_fence_seq');
END
$$;
REVOKE ALL ON FUNCTION sqlock.advisory_fence() FROM PUBLIC;

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
