-- Held locks whose name starts with p_prefix (matched literally, never as a pattern), in every
-- mode: live rows of sqlock.locks and advisory holds whose session still holds the lock.
-- expires_at is NULL for advisory holds (they end with their session).
--   SELECT * FROM sqlock.list_locks('orders:');
CREATE OR REPLACE FUNCTION sqlock.list_locks(p_prefix text DEFAULT '')
  RETURNS TABLE (name text, owner text, fence bigint, acquired_at text, expires_at text,
                 mode text, holder text)
  LANGUAGE sql STABLE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
  SELECT l.name, l.owner, l.fence, sqlock.iso(l.acquired_at), sqlock.iso(l.expires_at), l.mode,
         l.holder
    FROM sqlock.locks l
   WHERE l.owner IS NOT NULL AND l.expires_at > clock_timestamp()
     AND starts_with(l.name, coalesce(p_prefix, ''))
  UNION ALL
  SELECT h.name, h.owner, h.fence, sqlock.iso(h.acquired_at), NULL, 'advisory', h.holder
    FROM sqlock.advisory_holds h
   WHERE starts_with(h.name, coalesce(p_prefix, ''))
     AND sqlock.advisory_held(h.key, h.backend_pid)
   ORDER BY 1
$$;
REVOKE ALL ON FUNCTION sqlock.list_locks(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.list_locks(text) TO sqlock_execute;
