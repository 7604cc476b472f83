-- Renew (advisory mode): advisory locks have no lease; this verifies, on the holding session,
-- that the hold is still this owner's and that the session still holds the advisory lock.
-- false = lost (forced, or the session was replaced). A dead session fails the call itself,
-- which the client reports as a loss too.
--   SELECT sqlock.renew_advisory('orders:42', 'owner-token');
CREATE OR REPLACE FUNCTION sqlock.renew_advisory(p_name text, p_owner text) RETURNS boolean
  LANGUAGE sql STABLE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
  SELECT EXISTS (
    SELECT 1 FROM sqlock.advisory_holds h
     WHERE h.name = p_name AND h.owner = p_owner AND h.backend_pid = pg_backend_pid()
       AND sqlock.advisory_held(h.key, h.backend_pid))
$$;
REVOKE ALL ON FUNCTION sqlock.renew_advisory(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.renew_advisory(text, text) TO sqlock_execute;
