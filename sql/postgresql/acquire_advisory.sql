-- Advisory acquire: pg_advisory_lock(sqlock.lock_key(name)) held by the calling session until
-- release_advisory() or the end of the session, and the name's row in advisory_holds (UNLOGGED:
-- no WAL) updated with the owner, holder and a fencing token from sqlock.advisory_fence() (no
-- durable write either). Returns (fence, 'acquired') or (NULL, 'busy'); busy too while a row
-- mode holds the name (rows_hold).
-- p_wait_ms = 0: one try. p_wait_ms > 0: wait inside the server, in its lock queue, at most that
-- long (lock_timeout); the server hands the lock over at the moment it is released, in queue
-- order. A waiting session should carry no other hold (its release would wait behind it).
-- The lock is the session's: call renew_advisory/release_advisory on the SAME connection
-- (connection poolers in transaction mode break this; see the docs).
--   SELECT * FROM sqlock.acquire_advisory('orders:42', 'owner-token', 'host:pid:app');
--   SELECT * FROM sqlock.acquire_advisory('orders:42', 'owner-token', 'host:pid:app', 5000);
-- Version 3's three-argument function (which an older `sqlock migrate` may have put back) would
-- make three-argument calls ambiguous: this one serves them through its default.
DROP FUNCTION IF EXISTS sqlock.acquire_advisory(text, text, text);
CREATE OR REPLACE FUNCTION sqlock.acquire_advisory(p_name text, p_owner text, p_holder text,
                                                   p_wait_ms bigint DEFAULT 0,
                                                   OUT fence bigint, OUT status text)
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = sqlock, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  v_key     bigint;
  v_new     bigint;
  v_fence   bigint;
BEGIN
  IF p_name IS NULL OR p_name = '' OR p_owner IS NULL OR p_owner = '' THEN
    PERFORM sqlock.check_name_owner(p_name, p_owner);
  END IF;
  v_key := sqlock.lock_key(p_name);
  IF NOT pg_try_advisory_lock(v_key) THEN
    IF coalesce(p_wait_ms, 0) <= 0
       OR NOT sqlock.advisory_take(v_key, p_name, false, p_wait_ms) THEN
      status := 'busy';
      RETURN;
    END IF;
  ELSIF sqlock.rows_hold(p_name, true) THEN
    -- A row mode holds the name (one name, one lock across modes): give the key back.
    PERFORM pg_advisory_unlock(v_key);
    IF coalesce(p_wait_ms, 0) <= 0
       OR NOT sqlock.advisory_take(v_key, p_name, false, p_wait_ms) THEN
      status := 'busy';
      RETURN;
    END IF;
  END IF;
  -- The session holds the lock now (perhaps one level more, if it held it already).
  -- Common case in one statement: the name's row exists and the live epoch is there, so the
  -- fence is sqlock.advisory_fence() inline (the epoch and the next counter) and the row is
  -- rewritten in place. Each statement a routine runs costs an executor start, so the rare
  -- cases (first hold of a name, no live epoch after a crash or promotion, a spent counter, the
  -- same owner again on this session) fall through to the statements below.
  v_new := nextval('sqlock.advisory_fence_seq');
  UPDATE sqlock.advisory_holds h
     SET key = v_key, owner = p_owner, fence = (e.epoch << 44) | v_new,
         backend_pid = pg_backend_pid(), acquired_at = clock_timestamp(),
         holder = coalesce(p_holder, ''), client_addr = inet_client_addr(),
         application = coalesce(current_setting('application_name', true), '')
    FROM sqlock.fence_epoch_live e
   WHERE h.name = p_name AND NOT (h.owner = p_owner AND h.backend_pid = pg_backend_pid())
     AND v_new < 17592186044416
  RETURNING h.fence INTO v_fence;
  IF FOUND THEN
    v_new := v_fence;
  ELSE
    v_new := sqlock.advisory_fence();  -- the epoch raised if need be (or a spent counter's error)
    v_fence := NULL;
    UPDATE sqlock.advisory_holds h
       SET key = v_key, owner = p_owner, fence = v_new, backend_pid = pg_backend_pid(),
           acquired_at = clock_timestamp(), holder = coalesce(p_holder, ''),
           client_addr = inet_client_addr(),
           application = coalesce(current_setting('application_name', true), '')
     WHERE h.name = p_name AND NOT (h.owner = p_owner AND h.backend_pid = pg_backend_pid())
    RETURNING h.fence INTO v_fence;
  END IF;
  IF NOT FOUND THEN
    INSERT INTO sqlock.advisory_holds (name, key, owner, fence, backend_pid, acquired_at, holder,
                                       client_addr, application)
    VALUES (p_name, v_key, p_owner, v_new, pg_backend_pid(), clock_timestamp(),
            coalesce(p_holder, ''), inet_client_addr(),
            coalesce(current_setting('application_name', true), ''))
    ON CONFLICT (name) DO NOTHING
    RETURNING fence INTO v_fence;
    IF NOT FOUND THEN
      -- The row names this owner on this session: a retried call (it held the lock already and
      -- now holds one level more) or a hold this owner released earlier (then this is the only
      -- level). Drop one level and look which it was.
      PERFORM pg_advisory_unlock(v_key);
      SELECT h.fence INTO v_fence FROM sqlock.advisory_holds h WHERE h.name = p_name;
      IF NOT sqlock.advisory_held(v_key, pg_backend_pid()) THEN
        IF NOT pg_try_advisory_lock(v_key) THEN
          status := 'busy';
          RETURN;
        END IF;
        UPDATE sqlock.advisory_holds h
           SET fence = v_new, acquired_at = clock_timestamp(), holder = coalesce(p_holder, '')
         WHERE h.name = p_name;
        v_fence := v_new;
      END IF;
    END IF;
  END IF;
  IF v_fence = v_new AND sqlock.audit_on() THEN
    PERFORM sqlock.log_event('acquire', p_name, p_owner, v_fence, 'advisory', p_holder);
  END IF;
  fence := v_fence;
  status := 'acquired';
END
$$;
REVOKE ALL ON FUNCTION sqlock.acquire_advisory(text, text, text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sqlock.acquire_advisory(text, text, text, bigint) TO sqlock_execute;
