-- Renew (pessimistic and optimistic modes, every kind): extends an unexpired hold of this owner to
-- now + lease on the server's clock. true = renewed; false = the hold is gone (expired and
-- possibly taken, released, or forced).
--   SELECT sqlock.renew('orders:42', 'owner-token', 30000);
CREATE OR REPLACE FUNCTION sqlock.renew(p_name text, p_owner text, p_lease_ms bigint)
  RETURNS boolean
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
BEGIN
  PERFORM sqlock.check_lease(p_lease_ms);
  UPDATE sqlock.locks l
     SET expires_at = clock_timestamp() + p_lease_ms * interval '1 millisecond'
   WHERE l.name = p_name AND l.owner = p_owner AND l.expires_at > clock_timestamp();
  IF FOUND THEN
    RETURN true;
  END IF;
  -- A shared or permit hold: only this owner's row; the name's other holders are not touched.
  UPDATE sqlock.holders h
     SET expires_at = clock_timestamp() + p_lease_ms * interval '1 millisecond'
   WHERE h.name = p_name AND h.owner = p_owner AND h.expires_at > clock_timestamp();
  RETURN FOUND;
END
$$;
REVOKE ALL ON FUNCTION sqlock.renew(text, text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.renew(text, text, bigint) TO sqlock_execute;
