-- The fence epoch every mode shares (migration V004: sqlock.fence_epoch, durable; its UNLOGGED
-- copy sqlock.fence_epoch_live). The copy is empty after a crash and on a replica just promoted
-- (the server empties UNLOGGED tables then); the first caller that finds it empty raises the
-- durable epoch by one and copies it there, so every fence made from the epoch afterwards is
-- above every fence made before, whatever the counters did.
--   SELECT sqlock.fence_epoch_now();
-- (No SET search_path: every name in it is schema-qualified.)
CREATE OR REPLACE FUNCTION sqlock.fence_epoch_now() RETURNS bigint
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
  v_epoch bigint;
BEGIN
  SELECT e.epoch INTO v_epoch FROM sqlock.fence_epoch_live e;
  IF v_epoch IS NULL THEN
    -- One caller at a time: the row lock on the durable epoch; the others then find it live.
    SELECT e.epoch INTO v_epoch FROM sqlock.fence_epoch e FOR UPDATE;
    SELECT e.epoch INTO v_epoch FROM sqlock.fence_epoch_live e;
    IF v_epoch IS NULL THEN
      -- Every token of the new epoch relies on this commit being durable before it is used.
      PERFORM pg_catalog.set_config('synchronous_commit', 'on', true);
      UPDATE sqlock.fence_epoch e SET epoch = e.epoch + 1 RETURNING e.epoch INTO v_epoch;
      INSERT INTO sqlock.fence_epoch_live (epoch) VALUES (v_epoch);
    END IF;
  END IF;
  RETURN v_epoch;
END
$$;
REVOKE ALL ON FUNCTION sqlock.fence_epoch_now() FROM PUBLIC;

-- The next fencing token drawn from the sequence p_seq: (epoch << 44) | nextval(p_seq), the
-- epoch from fence_epoch_now(); an error naming the fix once the sequence has spent its 44 bits
-- (1.7e13 holds in one epoch). Every mode's token comes from here (row_fence, advisory_fence).
CREATE OR REPLACE FUNCTION sqlock.next_fence(p_seq regclass) RETURNS bigint
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
  v_n     bigint := pg_catalog.nextval(p_seq);
  v_epoch bigint;
BEGIN
  -- fence_epoch_now()'s common case here, one call less per hold.
  SELECT e.epoch INTO v_epoch FROM sqlock.fence_epoch_live e;
  IF v_epoch IS NULL THEN
    v_epoch := sqlock.fence_epoch_now();
  END IF;
  IF v_n OPERATOR(pg_catalog.>=) 17592186044416 THEN
    RAISE EXCEPTION 'sqlock: fence counter % exhausted in epoch %', p_seq, v_epoch
      USING HINT = 'DELETE FROM sqlock.fence_epoch_live; then ALTER SEQUENCE ' || p_seq::text
                   || ' RESTART, with no lock being taken';
  END IF;
  RETURN (v_epoch OPERATOR(pg_catalog.<<) 44) OPERATOR(pg_catalog.|) v_n;
END
$$;
REVOKE ALL ON FUNCTION sqlock.next_fence(regclass) FROM PUBLIC;

-- The fencing token of a new row-mode hold (pessimistic, optimistic, shared, permit), from the
-- same counter as advisory holds' since schema version 10 (one fence source per store, so the
-- fences of a name rise in one order whatever mode took them): (epoch << 44) | n, n from the
-- UNLOGGED sequence sqlock.advisory_fence_seq. A crash or a promotion resets that sequence and
-- empties fence_epoch_live, and the first acquire afterwards raises the durable epoch, so every
-- later token exceeds every earlier one, as with the logged sequence sqlock.fence_seq the row
-- modes drew from before (V007; the migration to version 10 moved the shared counter above it).
--   SELECT sqlock.row_fence();
CREATE OR REPLACE FUNCTION sqlock.row_fence() RETURNS bigint
  LANGUAGE sql VOLATILE
AS $$
  SELECT sqlock.next_fence('sqlock.advisory_fence_seq')
$$;
REVOKE ALL ON FUNCTION sqlock.row_fence() FROM PUBLIC;

-- The fencing token of a new advisory hold: (epoch << 44) | n, n from the UNLOGGED sequence
-- sqlock.advisory_fence_seq, the counter of every mode (row_fence above): no WAL, so no durable
-- write per hold; the server resets it after a crash or on a promoted replica, together with
-- fence_epoch_live, so the epoch rises then. Tokens therefore strictly rise across clean
-- restarts and crashes alike: the transaction that raises the epoch commits with
-- synchronous_commit on, whatever the session's setting. See docs/backends/postgres.md for
-- what a failover to an asynchronous replica does to them. acquire_advisory and the lean pair
-- (advisory_session.sql) inline its common case.
--   SELECT sqlock.advisory_fence();
CREATE OR REPLACE FUNCTION sqlock.advisory_fence() RETURNS bigint
  LANGUAGE sql VOLATILE
AS $$
  SELECT sqlock.next_fence('sqlock.advisory_fence_seq')
$$;
REVOKE ALL ON FUNCTION sqlock.advisory_fence() FROM PUBLIC;
