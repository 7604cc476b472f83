-- The newest lock events of sqlock.events (force_release and sweep always; acquire and release
-- when sqlock.audit is on), newest first, of names starting with p_prefix (matched literally),
-- at most p_limit (1..10000) rows. What the admin page's audit trail shows.
--   SELECT * FROM sqlock.recent_events('orders:', 100);
CREATE OR REPLACE FUNCTION sqlock.recent_events(p_prefix text, p_limit bigint)
  RETURNS TABLE (at text, event text, name text, owner text, fence bigint, mode text,
                 holder text, actor text, detail text)
  LANGUAGE sql STABLE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
  SELECT sqlock.iso(e.at), e.event, e.name, e.owner, e.fence, e.mode, e.holder, e.actor,
         e.detail
    FROM sqlock.events e
   WHERE starts_with(coalesce(e.name, ''), coalesce(p_prefix, ''))
   ORDER BY e.id DESC
   LIMIT least(greatest(coalesce(p_limit, 100), 1), 10000)
$$;
REVOKE ALL ON FUNCTION sqlock.recent_events(text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.recent_events(text, bigint) TO sqlock_execute;
