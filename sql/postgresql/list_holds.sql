-- Every hold of names starting with p_prefix, of every kind: list_locks() (exclusive and
-- advisory holds) and one row per live shared or permit hold (lease or advisory), with kind and
-- permits.
--   SELECT * FROM sqlock.list_holds('reports');
CREATE OR REPLACE FUNCTION sqlock.list_holds(p_prefix text DEFAULT '')
  RETURNS TABLE (name text, owner text, fence bigint, acquired_at text, expires_at text,
                 mode text, holder text, kind text, permits integer)
  LANGUAGE sql STABLE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
  SELECT l.name, l.owner, l.fence, l.acquired_at, l.expires_at, l.mode, l.holder,
         'exclusive', 0
    FROM sqlock.list_locks(p_prefix) l
  UNION ALL
  SELECT h.name, h.owner, h.fence, sqlock.iso(h.acquired_at), sqlock.iso(h.expires_at), h.mode,
         h.holder, h.kind, h.permits
    FROM sqlock.holders h
   WHERE h.expires_at > clock_timestamp() AND starts_with(h.name, coalesce(p_prefix, ''))
  UNION ALL
  SELECT h.name, h.owner, h.fence, sqlock.iso(h.acquired_at), NULL, 'advisory', h.holder, h.kind,
         h.permits
    FROM sqlock.advisory_shared h
   WHERE starts_with(h.name, coalesce(p_prefix, '')) AND h.owner IS NOT NULL
     AND sqlock.advisory_held_as(h.key, h.backend_pid, h.lock_mode)
   ORDER BY 1, 3
$$;
REVOKE ALL ON FUNCTION sqlock.list_holds(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.list_holds(text) TO sqlock_execute;
