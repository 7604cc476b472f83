-- Helpers of the shared and permit holds (row modes), used by the acquire functions of every
-- kind. Installed after 00_common.sql (files run in name order).

-- Serializes the acquires of one name, of every kind, until the calling transaction ends: a
-- transaction-level advisory lock in the two-key space (class 1397836875 = 'SQLK', key =
-- hashtext(name)), apart from the one-key space of advisory mode and xact_lock(). Held for the
-- few statements of one acquire; two names sharing a hash only wait for each other that long.
--   SELECT * FROM pg_locks WHERE locktype = 'advisory' AND classid = 1397836875;
CREATE OR REPLACE FUNCTION sqlock.name_guard(p_name text) RETURNS void
  LANGUAGE sql VOLATILE
AS $$
  SELECT pg_catalog.pg_advisory_xact_lock(1397836875, pg_catalog.hashtext(p_name))
$$;
REVOKE ALL ON FUNCTION sqlock.name_guard(text) FROM PUBLIC;

-- True when a shared or permit hold of the name is live at p_now (call under name_guard).
CREATE OR REPLACE FUNCTION sqlock.shared_held(p_name text, p_now timestamptz) RETURNS boolean
  LANGUAGE sql STABLE
  SET search_path = sqlock, pg_temp
AS $$
  SELECT EXISTS (SELECT 1 FROM sqlock.holders h
                  WHERE h.name = p_name AND h.expires_at > p_now)
$$;
REVOKE ALL ON FUNCTION sqlock.shared_held(text, timestamptz) FROM PUBLIC;

-- The end of an exclusive acquire attempt (call under name_guard): acquired = remove this
-- request's writer mark; busy inside a waiting acquire() call (p_mark_ms > 0) = leave the mark,
-- or move this request's own mark on, unless another waiting writer's live mark is there.
CREATE OR REPLACE FUNCTION sqlock.writer_mark(p_name text, p_owner text, p_mark_ms bigint,
                                              p_acquired boolean) RETURNS void
  LANGUAGE plpgsql VOLATILE
  SET search_path = sqlock, pg_temp
AS $$
BEGIN
  IF p_acquired THEN
    DELETE FROM sqlock.writer_marks m WHERE m.name = p_name AND m.owner = p_owner;
  ELSIF coalesce(p_mark_ms, 0) > 0 THEN
    INSERT INTO sqlock.writer_marks AS m (name, owner, expires_at)
    VALUES (p_name, p_owner, clock_timestamp() + p_mark_ms * interval '1 millisecond')
    ON CONFLICT (name) DO UPDATE
       SET owner = excluded.owner, expires_at = excluded.expires_at
     WHERE m.owner = excluded.owner OR m.expires_at <= clock_timestamp();
  END IF;
END
$$;
REVOKE ALL ON FUNCTION sqlock.writer_mark(text, text, bigint, boolean) FROM PUBLIC;
