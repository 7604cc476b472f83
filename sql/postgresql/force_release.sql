-- Administrative release of a name whoever holds it; always written to sqlock.events.
-- Lease holds (exclusive, shared and permit) are deleted. An advisory hold (of any kind) belongs
-- to a session: that session is terminated (pg_terminate_backend, waiting up to 5 s for it to
-- end), which frees EVERY lock it held; the clients holding them see the loss at their next
-- renewal. Terminating another role's session needs the function owner to have
-- pg_signal_backend (GRANT pg_signal_backend TO owner_role).
-- true = a live hold was released. p_actor: who forces it (a person or tool, bound by the
-- client; NULL or '' = not named), written to each event as "ACTOR (role ROLE)" (log_forced).
--   SELECT sqlock.force_release('orders:42', 'alice@ops-1');
CREATE OR REPLACE FUNCTION sqlock.force_release(p_name text, p_actor text) RETURNS boolean
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
DECLARE
  r   record;
  v_n integer := 0;
BEGIN
  FOR r IN DELETE FROM sqlock.locks l WHERE l.name = p_name
           RETURNING l.owner, l.fence, l.mode, l.holder, l.expires_at LOOP
    IF r.owner IS NOT NULL AND r.expires_at > clock_timestamp() THEN
      v_n := v_n + 1;
      PERFORM sqlock.log_forced(p_actor, p_name, r.owner, r.fence, r.mode, r.holder);
    END IF;
  END LOOP;
  FOR r IN SELECT h.* FROM sqlock.advisory_holds h WHERE h.name = p_name FOR UPDATE LOOP
    IF sqlock.advisory_held(r.key, r.backend_pid) THEN
      v_n := v_n + 1;
      PERFORM sqlock.log_forced(p_actor, p_name, r.owner, r.fence, 'advisory', r.holder,
                                'terminated session ' || r.backend_pid);
      IF r.backend_pid = pg_backend_pid() THEN
        PERFORM pg_advisory_unlock(r.key);
      ELSE
        PERFORM pg_terminate_backend(r.backend_pid, 5000);
      END IF;
    END IF;
    DELETE FROM sqlock.advisory_holds h WHERE h.name = p_name;
  END LOOP;
  -- An exclusive advisory hold the library took with advisory_lock() has no row until it has
  -- lasted ~10 ms (advisory_session.sql): its session is found in pg_locks.
  FOR r IN SELECT l.pid FROM pg_catalog.pg_locks l
            WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
              AND l.mode = 'ExclusiveLock'
              AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d
                                 WHERE d.datname = pg_catalog.current_database())
              AND l.classid = ((sqlock.lock_key(p_name) >> 32) & 4294967295)::oid
              AND l.objid = (sqlock.lock_key(p_name) & 4294967295)::oid
              -- Not a row mode's acquire, which holds the key for its transaction, under
              -- name_guard (01_holders.sql): its row is the hold, deleted above.
              AND NOT EXISTS (
                SELECT 1 FROM pg_catalog.pg_locks g
                 WHERE g.locktype = 'advisory' AND g.granted AND g.pid = l.pid
                   AND g.objsubid = 2 AND g.database = l.database
                   AND g.classid = 1397836875::oid
                   AND g.objid = (pg_catalog.hashtext(p_name)::bigint & 4294967295)::oid) LOOP
    v_n := v_n + 1;
    PERFORM sqlock.log_forced(p_actor, p_name, NULL, NULL, 'advisory', NULL,
                              'terminated session ' || r.pid);
    IF r.pid = pg_backend_pid() THEN
      PERFORM pg_advisory_unlock(sqlock.lock_key(p_name));
    ELSE
      PERFORM pg_terminate_backend(r.pid, 5000);
    END IF;
  END LOOP;
  -- Shared and permit advisory holds: their sessions are terminated the same way.
  FOR r IN DELETE FROM sqlock.advisory_shared h WHERE h.name = p_name RETURNING h.* LOOP
    IF r.owner IS NOT NULL AND sqlock.advisory_held_as(r.key, r.backend_pid, r.lock_mode) THEN
      v_n := v_n + 1;
      PERFORM sqlock.log_forced(p_actor, p_name, r.owner, r.fence, 'advisory', r.holder,
                                'terminated session ' || r.backend_pid);
      IF r.backend_pid = pg_backend_pid() THEN
        IF r.kind = 'permit' THEN
          PERFORM pg_advisory_unlock(r.key);
        END IF;
        PERFORM pg_advisory_unlock_shared(sqlock.lock_key(p_name));
      ELSE
        PERFORM pg_terminate_backend(r.backend_pid, 5000);
      END IF;
    END IF;
  END LOOP;
  -- Shared and permit lease holds, and a waiting writer's mark.
  FOR r IN DELETE FROM sqlock.holders h WHERE h.name = p_name
           RETURNING h.owner, h.fence, h.mode, h.holder, h.expires_at LOOP
    IF r.expires_at > clock_timestamp() THEN
      v_n := v_n + 1;
      PERFORM sqlock.log_forced(p_actor, p_name, r.owner, r.fence, r.mode, r.holder);
    END IF;
  END LOOP;
  DELETE FROM sqlock.writer_marks m WHERE m.name = p_name;
  IF v_n > 0 THEN
    PERFORM sqlock.wake(p_name);
  END IF;
  RETURN v_n > 0;
END
$$;
REVOKE ALL ON FUNCTION sqlock.force_release(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.force_release(text, text) TO sqlock_execute;

-- The signature of schema versions up to 12, which a client of those versions calls: the same
-- release, its events naming the role alone.
CREATE OR REPLACE FUNCTION sqlock.force_release(p_name text) RETURNS boolean
  LANGUAGE sql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
  SELECT sqlock.force_release(p_name, NULL::text)
$$;
REVOKE ALL ON FUNCTION sqlock.force_release(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.force_release(text) TO sqlock_execute;
