-- The requests waiting for a lock (schema version 14, sqlock.waiting_requests): what a client
-- writes of its waiting requests, and what `sqlock list --waiting` and the admin page read.

-- Writes a batch of a client's waiting requests. p_waits is a JSON object:
--   {"waiting": [{name, owner, holder, kind, permits, age_ms}, ...],
--    "ended":   [{name, owner}, ...]}
-- `waiting`: requests that wait (`age_ms` milliseconds so far, measured on the client's
-- monotonic clock), written or written again, each row then stale p_life_ms from now;
-- `ended`: requests that stopped waiting (granted or given up), deleted. Returns the rows
-- written and deleted.
--   SELECT sqlock.record_waits('{"waiting": [{"name": "orders:42", "owner": "owner-token",
--     "holder": "host:pid:app", "kind": "exclusive", "permits": 0, "age_ms": 10}],
--     "ended": []}', 90000);
CREATE OR REPLACE FUNCTION sqlock.record_waits(p_waits jsonb, p_life_ms bigint)
  RETURNS bigint
  LANGUAGE sql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
  WITH gone AS (
    DELETE FROM sqlock.waiting_requests w
     USING jsonb_to_recordset(coalesce(p_waits -> 'ended', '[]')) AS e(name text, owner text)
     WHERE w.name = e.name AND w.owner = e.owner
    RETURNING 1),
  written AS (
    INSERT INTO sqlock.waiting_requests AS w (name, owner, holder, kind, permits, since, until)
    SELECT r.name, r.owner, left(coalesce(r.holder, ''), 1000),
           CASE WHEN r.kind IN ('shared', 'permit') THEN r.kind ELSE 'exclusive' END,
           greatest(coalesce(r.permits, 0), 0),
           clock_timestamp() - greatest(coalesce(r.age_ms, 0), 0) * interval '1 ms',
           clock_timestamp() + least(greatest(p_life_ms, 0), 3600000) * interval '1 ms'
      FROM jsonb_to_recordset(coalesce(p_waits -> 'waiting', '[]'))
             AS r(name text, owner text, holder text, kind text, permits integer, age_ms bigint)
     WHERE r.name IS NOT NULL AND r.owner IS NOT NULL AND r.owner <> ''
    ON CONFLICT (name, owner) DO UPDATE SET until = excluded.until
    RETURNING 1)
  SELECT (SELECT count(*) FROM gone) + (SELECT count(*) FROM written)
$$;
REVOKE ALL ON FUNCTION sqlock.record_waits(jsonb, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.record_waits(jsonb, bigint) TO sqlock_execute;

-- The requests waiting for locks whose name starts with p_prefix (matched literally), by name
-- and then by when each began waiting. A request whose owner holds the name by now (its end not
-- written yet) is left out.
--   SELECT * FROM sqlock.list_waiting('orders:');
CREATE OR REPLACE FUNCTION sqlock.list_waiting(p_prefix text DEFAULT '')
  RETURNS TABLE (name text, owner text, holder text, kind text, permits integer, since text)
  LANGUAGE sql STABLE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
  WITH held AS (SELECT h.name, h.owner FROM sqlock.list_holds(p_prefix) h)
  SELECT w.name, w.owner, w.holder, w.kind, w.permits, sqlock.iso(w.since)
    FROM sqlock.waiting_requests w
   WHERE starts_with(w.name, coalesce(p_prefix, '')) AND w.until > clock_timestamp()
     AND NOT EXISTS (SELECT 1 FROM held h WHERE h.name = w.name AND h.owner = w.owner)
   ORDER BY w.name, w.since, w.owner
$$;
REVOKE ALL ON FUNCTION sqlock.list_waiting(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.list_waiting(text) TO sqlock_execute;
