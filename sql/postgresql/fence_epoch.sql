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
      UPDATE sqlock.fence_epoch e SET epoch = e.epoch + 1 RETURNING e.epoch INTO v_epoch;
      INSERT INTO sqlock.fence_epoch_live (epoch) VALUES (v_epoch);
    END IF;
  END IF;
  RETURN v_epoch;
END
$$;
REVOKE ALL ON FUNCTION sqlock.fence_epoch_now() FROM PUBLIC;

-- A fencing token from an epoch and a counter value: (p_epoch << 44) | p_n; an error naming the
-- fix once the counter p_seq has spent its 44 bits (1.7e13 holds in one epoch).
CREATE OR REPLACE FUNCTION sqlock.epoch_fence(p_epoch bigint, p_n bigint, p_seq text)
  RETURNS bigint
  LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
  IF p_n OPERATOR(pg_catalog.>=) 17592186044416 THEN
    RAISE EXCEPTION 'sqlock: fence counter sqlock.% exhausted in epoch %', p_seq, p_epoch
      USING HINT = 'DELETE FROM sqlock.fence_epoch_live; then ALTER SEQUENCE sqlock.' || p_seq
                   || ' RESTART, with no lock being taken';
  END IF;
  RETURN (p_epoch OPERATOR(pg_catalog.<<) 44) OPERATOR(pg_catalog.|) p_n;
END
$$;
REVOKE ALL ON FUNCTION sqlock.epoch_fence(bigint, bigint, text) FROM PUBLIC;

-- The fencing token of a new row-mode hold (pessimistic, optimistic, shared, permit):
-- (epoch << 44) | n, n from the logged sequence sqlock.fence_seq. The sequence alone rises on
-- one server and across its crashes, but a replica promoted before it received the newest values
-- hands them out again (docs/reliability.md, "PostgreSQL failover"); the epoch, raised on the
-- promoted replica by its first acquire, keeps every later token above them. Tokens of version
-- 6 and before (the bare sequence, below 2^44) stay below every token made here.
--   SELECT sqlock.row_fence();
CREATE OR REPLACE FUNCTION sqlock.row_fence() RETURNS bigint
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
  v_n bigint := pg_catalog.nextval('sqlock.fence_seq');
BEGIN
  RETURN sqlock.epoch_fence(sqlock.fence_epoch_now(), v_n, 'fence_seq');
END
$$;
REVOKE ALL ON FUNCTION sqlock.row_fence() FROM PUBLIC;
