-- The lean advisory pair the sqlock library calls on MariaDB (schema version 4).
-- sqlock_advisory_acquire (advisory.sql) also records every hold in sqlock_advisory_holds, for
-- callers that keep no record of their own (the mysql client, another language). That CALL and
-- its record cost the server about a third of the raw GET_LOCK + RELEASE_LOCK pair
-- (docs/backends/mysql.md has the figures). The library knows its own holds (a session carries
-- one hold of a name, tracked in the client), so it takes a hold with sqlock_advisory_lock(),
-- which writes nothing, releases it with a plain statement, and records a hold with
-- sqlock_advisory_record from another session once the hold has lived ~10 ms: a short hold is
-- never written, and a long one pays one row write in the background. Until then list() of
-- other processes does not show the hold (the holding process's own list() records its holds
-- first).
--
-- The fence of a hold taken here is known to the server at once all the same: the session also
-- takes the GET_LOCK lock 'sqlock!<fence>' (a name no lock name maps to: sqlock_lock_name gives
-- 'sqlock:' or 'sqlock#'). fence_check finds a session holding both the name's lock and its
-- fence's. Nothing is written for it; the lock ends with the hold or its session. (Another
-- client that took 'sqlock!<fence>' itself would make fence_check refuse this one hold: refusal
-- is the safe side.)
--
-- MySQL 8 has no sequences; a fence there costs the counter row's durable write, which a
-- function cannot commit on its own: there sqlock_advisory_lock fails, and the library keeps
-- calling sqlock_advisory_acquire.

DELIMITER $$

-- Takes the GET_LOCK lock p_lock = sqlock_lock_name(name) on the calling session: one try
-- (p_wait_ms = 0) or a wait inside the server of at most p_wait_ms. Returns the fencing token,
-- or NULL when busy — including when this very session holds the lock already (GET_LOCK would
-- nest). It takes the GET_LOCK name, not the lock name: the library computes the mapping itself
-- (src/backends/mysql/lock_name.cpp), and in SQL it costs more than the rest of the call (a
-- REGEXP per call). Any other string is refused: a lock name passed as it is would take a lock
-- that no sqlock holder takes. Release with sqlock_advisory_unlock(name, fence), or as the
-- library does, with the plain statement
--   SELECT RELEASE_LOCK(p_lock), RELEASE_LOCK(CONCAT('sqlock!', fence));
-- After a start of the server, CALL sqlock_fence_epoch_raise(@e) once first (the library does on
-- each new session); until then it fails, having taken nothing.
-- Declared READS SQL DATA: it writes no table (the sequence's cache refills, one per 1,000
-- fences, MariaDB logs in row form whatever the declaration), so that installing it on a server
-- with the binary log on needs no log_bin_trust_function_creators.
--   SELECT sqlock_advisory_lock(sqlock_lock_name('orders:42'), 0);
DROP FUNCTION IF EXISTS sqlock_advisory_lock$$
CREATE FUNCTION sqlock_advisory_lock(
  p_lock VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin,
  p_wait_ms BIGINT) RETURNS BIGINT UNSIGNED
NOT DETERMINISTIC READS SQL DATA SQL SECURITY DEFINER
BEGIN
  -- As few instructions as will do: each one costs server time on every acquisition (a SET of
  -- a variable is far cheaper than a statement such as DO).
  DECLARE v_fence BIGINT UNSIGNED;
  IF p_lock IS NULL OR LEFT(p_lock, 7) NOT IN ('sqlock:', 'sqlock#') THEN
    SIGNAL SQLSTATE '22023' SET MESSAGE_TEXT =
      'sqlock_advisory_lock takes sqlock_lock_name(name), not the lock name itself';
  END IF;
  IF IS_USED_LOCK(p_lock) = CONNECTION_ID()
     OR GET_LOCK(p_lock, GREATEST(COALESCE(p_wait_ms, 0), 0) / 1000) IS NOT TRUE THEN
    RETURN NULL;
  END IF;
  BEGIN
    DECLARE EXIT HANDLER FOR SQLEXCEPTION
    BEGIN
      DO RELEASE_LOCK(p_lock);  -- taken by this call: let go of it, then fail
      RESIGNAL;
    END;
    -- (epoch << 40) + the sequence (migrations/mysql/V004). MySQL 8: no NEXTVAL, it fails here.
    SET v_fence = (SELECT (e.epoch << 40) + NEXTVAL(sqlock_fence_seq)
                     FROM sqlock_fence_epoch_live e WHERE e.id = 1);
    IF v_fence IS NULL THEN
      SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT =
        'sqlock: no fence epoch since the server started: CALL sqlock_fence_epoch_raise(@e), then lock again';
    END IF;
  END;
  RETURN IF(GET_LOCK(CONCAT('sqlock!', v_fence), 0) IS NULL, NULL, v_fence);
END$$

-- sqlock_advisory_lock for one name, one lock across modes (schema version 5), the form the
-- library calls: p_lock = sqlock_lock_name(p_name), and p_name itself, whose row-mode holds it
-- looks up once the session holds p_lock (sqlock_rows_hold in 01_holders.sql). While a row mode
-- holds the name, the lock is given back: NULL at once, or, waiting (p_wait_ms > 0), taken
-- again after a pause of 5 ms doubling to 100 ms, within p_wait_ms in all.
-- A wait inside it (p_wait_ms > 0) keeps what the statement reads locked for the whole wait:
-- the MEMORY table sqlock_row_names (a table lock: every row-mode acquire of a name new since
-- the server started waits for it) and the InnoDB rows its look-up read. The library (schema
-- version 7 on) calls it with p_wait_ms = 0 only, and waits in a plain GET_LOCK statement,
-- then calls sqlock_advisory_claim.
--   SELECT sqlock_advisory_take(sqlock_lock_name('orders:42'), 'orders:42', 0);
DROP FUNCTION IF EXISTS sqlock_advisory_take$$
CREATE FUNCTION sqlock_advisory_take(
  p_lock VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin,
  p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  p_wait_ms BIGINT) RETURNS BIGINT UNSIGNED
NOT DETERMINISTIC READS SQL DATA SQL SECURITY DEFINER
BEGIN
  -- As few statements as will do on the common path (each costs server time on every
  -- acquisition): the lock, then one statement for the fence that is NULL when the name is
  -- listed in sqlock_row_names (or the list is not to be trusted) or there is no live epoch.
  DECLARE v_fence BIGINT UNSIGNED;
  DECLARE v_left BIGINT DEFAULT GREATEST(COALESCE(p_wait_ms, 0), 0);
  DECLARE v_until DATETIME(6);
  DECLARE v_pause BIGINT DEFAULT 5;
  -- sqlock_key(p_name), written out (a stored function call costs more than the expression).
  DECLARE v_key VARBINARY(255) DEFAULT
    IF(LENGTH(p_name) <= 255 AND LEFT(CAST(p_name AS BINARY), 1) <> X'00',
       CAST(p_name AS BINARY), CONCAT(X'00', UNHEX(SHA2(p_name, 256))));
  IF p_lock IS NULL OR LEFT(p_lock, 7) NOT IN ('sqlock:', 'sqlock#') OR p_name IS NULL THEN
    SIGNAL SQLSTATE '22023' SET MESSAGE_TEXT =
      'sqlock_advisory_take takes sqlock_lock_name(name) and the name';
  END IF;
  IF IS_USED_LOCK(p_lock) = CONNECTION_ID() OR GET_LOCK(p_lock, v_left / 1000) IS NOT TRUE THEN
    RETURN NULL;
  END IF;
  BEGIN
    DECLARE EXIT HANDLER FOR SQLEXCEPTION
    BEGIN
      DO RELEASE_LOCK(p_lock);  -- taken by this call: let go of it, then fail
      RESIGNAL;
    END;
    SET v_fence = (SELECT (e.epoch << 40) + NEXTVAL(sqlock_fence_seq)
                     FROM sqlock_fence_epoch_live e
                    WHERE e.id = 1
                      AND (SELECT COUNT(*) = 1 AND MAX(r.name_key = X'FF' AND r.all_names = 0)
                             FROM sqlock_row_names r WHERE r.name_key IN (v_key, X'FF')));
    IF v_fence IS NULL THEN
      -- The name is listed (a row mode took it since the server started) or the list is not to
      -- be trusted: the InnoDB look-up, and while a row mode holds the name, the lock given
      -- back and (waiting) taken again after a pause, within p_wait_ms in all. SYSDATE(6): the
      -- time now (UTC_TIMESTAMP() would stay at the start of the statement).
      SET v_until = SYSDATE(6) + INTERVAL v_left * 1000 MICROSECOND;
      take: LOOP
        IF NOT sqlock_rows_hold(v_key) THEN
          LEAVE take;
        END IF;
        DO RELEASE_LOCK(p_lock);
        SET v_left = TIMESTAMPDIFF(MICROSECOND, SYSDATE(6), v_until) DIV 1000;
        IF v_left <= 0 THEN
          RETURN NULL;
        END IF;
        DO SLEEP(LEAST(v_pause, v_left) / 1000);
        SET v_pause = LEAST(v_pause * 2, 100);
        SET v_left = GREATEST(TIMESTAMPDIFF(MICROSECOND, SYSDATE(6), v_until) DIV 1000, 0);
        IF GET_LOCK(p_lock, v_left / 1000) IS NOT TRUE THEN
          RETURN NULL;
        END IF;
      END LOOP;
      SET v_fence = (SELECT (e.epoch << 40) + NEXTVAL(sqlock_fence_seq)
                       FROM sqlock_fence_epoch_live e WHERE e.id = 1);
    END IF;
    IF v_fence IS NULL THEN
      SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT =
        'sqlock: no fence epoch since the server started: CALL sqlock_fence_epoch_raise(@e), then lock again';
    END IF;
  END;
  RETURN IF(GET_LOCK(CONCAT('sqlock!', v_fence), 0) IS NULL, NULL, v_fence);
END$$

-- The second half of a wait for p_name (schema version 7): the calling session has just taken
-- p_lock = sqlock_lock_name(p_name) with a plain GET_LOCK statement, which reads no table while
-- it waits. Looks up the name's row-mode holds (as sqlock_advisory_take does) and returns the
-- fencing token of the new hold; while a row mode holds the name, it gives the lock back and
-- returns NULL (the caller pauses before it asks again: nothing stays locked meanwhile). Fails,
-- taking nothing, when this session does not hold p_lock. Its look-up and fence are those of
-- sqlock_advisory_take, written out in both: take calling this would cost every acquisition a
-- nested stored-function call, more than the rest of its work.
--   SELECT GET_LOCK(sqlock_lock_name('orders:42'), 5);
--   SELECT sqlock_advisory_claim(sqlock_lock_name('orders:42'), 'orders:42');
DROP FUNCTION IF EXISTS sqlock_advisory_claim$$
CREATE FUNCTION sqlock_advisory_claim(
  p_lock VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin,
  p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin) RETURNS BIGINT UNSIGNED
NOT DETERMINISTIC READS SQL DATA SQL SECURITY DEFINER
BEGIN
  DECLARE v_fence BIGINT UNSIGNED;
  -- sqlock_key(p_name), written out (a stored function call costs more than the expression).
  DECLARE v_key VARBINARY(255) DEFAULT
    IF(LENGTH(p_name) <= 255 AND LEFT(CAST(p_name AS BINARY), 1) <> X'00',
       CAST(p_name AS BINARY), CONCAT(X'00', UNHEX(SHA2(p_name, 256))));
  IF p_lock IS NULL OR LEFT(p_lock, 7) NOT IN ('sqlock:', 'sqlock#') OR p_name IS NULL THEN
    SIGNAL SQLSTATE '22023' SET MESSAGE_TEXT =
      'sqlock_advisory_claim takes sqlock_lock_name(name) and the name';
  END IF;
  IF COALESCE(IS_USED_LOCK(p_lock) = CONNECTION_ID(), 0) = 0 THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT =
      'sqlock_advisory_claim: this session does not hold the lock (take it with GET_LOCK first)';
  END IF;
  BEGIN
    DECLARE EXIT HANDLER FOR SQLEXCEPTION
    BEGIN
      DO RELEASE_LOCK(p_lock);  -- let go of it, then fail
      RESIGNAL;
    END;
    SET v_fence = (SELECT (e.epoch << 40) + NEXTVAL(sqlock_fence_seq)
                     FROM sqlock_fence_epoch_live e
                    WHERE e.id = 1
                      AND (SELECT COUNT(*) = 1 AND MAX(r.name_key = X'FF' AND r.all_names = 0)
                             FROM sqlock_row_names r WHERE r.name_key IN (v_key, X'FF')));
    IF v_fence IS NULL THEN
      IF sqlock_rows_hold(v_key) THEN
        DO RELEASE_LOCK(p_lock);
        RETURN NULL;
      END IF;
      SET v_fence = (SELECT (e.epoch << 40) + NEXTVAL(sqlock_fence_seq)
                       FROM sqlock_fence_epoch_live e WHERE e.id = 1);
    END IF;
    IF v_fence IS NULL THEN
      SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT =
        'sqlock: no fence epoch since the server started: CALL sqlock_fence_epoch_raise(@e), then lock again';
    END IF;
  END;
  RETURN IF(GET_LOCK(CONCAT('sqlock!', v_fence), 0) IS NULL, NULL, v_fence);
END$$

-- Releases the hold of p_name taken on this session with fence p_fence (both GET_LOCK locks);
-- 1 = it was held, 0 = not (nothing released). For callers of sqlock_advisory_lock that do not
-- keep the GET_LOCK name; the library sends the two RELEASE_LOCKs itself.
DROP FUNCTION IF EXISTS sqlock_advisory_unlock$$
CREATE FUNCTION sqlock_advisory_unlock(
  p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  p_fence BIGINT UNSIGNED) RETURNS INT
NOT DETERMINISTIC NO SQL SQL SECURITY DEFINER
BEGIN
  DECLARE v_lock VARCHAR(64) CHARACTER SET ascii DEFAULT sqlock_lock_name(p_name);
  DECLARE v_fence_lock VARCHAR(64) CHARACTER SET ascii DEFAULT CONCAT('sqlock!', p_fence);
  IF COALESCE(IS_USED_LOCK(v_lock) = CONNECTION_ID(), 0) = 0
     OR COALESCE(IS_USED_LOCK(v_fence_lock) = CONNECTION_ID(), 0) = 0 THEN
    RETURN 0;
  END IF;
  DO RELEASE_LOCK(v_fence_lock);
  RETURN COALESCE(RELEASE_LOCK(v_lock), 0);
END$$

-- Records holds taken with sqlock_advisory_lock in sqlock_advisory_holds, from any session.
-- p_holds is a JSON array of {name, owner, fence, pid, age_ms, holder}: `name` held by `owner`
-- with fence `fence` on the session of CONNECTION_ID() `pid` for `age_ms` milliseconds now (the
-- holder measures the age on its monotonic clock; acquired_at is the server's clock minus it).
-- A hold whose session no longer holds both its locks is skipped, and a record is replaced
-- only by one with a higher fence (records of one name from two processes may arrive in either
-- order; fences of a name rise). One row: the rows written (ROW_COUNT(): a replaced record
-- counts twice).
--   CALL sqlock_advisory_record('[{"name": "orders:42", "owner": "owner-token",
--     "fence": 1000001, "pid": 12345, "age_ms": 10, "holder": "host:pid:app"}]');
DROP PROCEDURE IF EXISTS sqlock_advisory_record$$
CREATE PROCEDURE sqlock_advisory_record(IN p_holds LONGTEXT CHARACTER SET utf8mb4)
MODIFIES SQL DATA SQL SECURITY DEFINER
BEGIN
  DECLARE v_n INT DEFAULT 0;
  DECLARE v_unlogged INT DEFAULT 0;  -- as in sqlock_advisory_acquire: replicas hold no locks
  DECLARE EXIT HANDLER FOR SQLEXCEPTION
  BEGIN
    IF v_unlogged = 1 THEN SET SESSION sql_log_bin = 1; END IF;
    RESIGNAL;
  END;
  CALL sqlock_binlog_off(v_unlogged);
  -- fence last: the other columns compare against the old fence.
  INSERT INTO sqlock_advisory_holds (lock_name, owner, fence, connection_id, acquired_at,
                                     holder, fenced)
  SELECT h_lock, h_owner, h_fence, h_pid, h_since, h_holder, 1
    FROM (SELECT sqlock_lock_name(r.name) AS h_lock, r.owner AS h_owner, r.fence AS h_fence,
                 r.pid AS h_pid,
                 UTC_TIMESTAMP(6) - INTERVAL GREATEST(COALESCE(r.age_ms, 0), 0) * 1000 MICROSECOND
                   AS h_since,
                 LEFT(COALESCE(r.holder, ''), 255) AS h_holder
            FROM JSON_TABLE(p_holds, '$[*]' COLUMNS (
                   name TEXT CHARACTER SET utf8mb4 PATH '$.name',
                   owner VARCHAR(64) CHARACTER SET ascii PATH '$.owner',
                   fence BIGINT UNSIGNED PATH '$.fence',
                   pid BIGINT UNSIGNED PATH '$.pid',
                   age_ms BIGINT PATH '$.age_ms',
                   holder VARCHAR(255) CHARACTER SET utf8mb4 PATH '$.holder')) AS r
           WHERE r.name IS NOT NULL AND r.name <> '' AND r.owner IS NOT NULL AND r.owner <> ''
             AND r.fence IS NOT NULL AND r.pid IS NOT NULL) AS h
   WHERE IS_USED_LOCK(h_lock) = h_pid AND IS_USED_LOCK(CONCAT('sqlock!', h_fence)) = h_pid
  ON DUPLICATE KEY UPDATE
    owner = IF(fence < VALUES(fence), VALUES(owner), owner),
    connection_id = IF(fence < VALUES(fence), VALUES(connection_id), connection_id),
    acquired_at = IF(fence < VALUES(fence), VALUES(acquired_at), acquired_at),
    holder = IF(fence < VALUES(fence), VALUES(holder), holder),
    fenced = IF(fence < VALUES(fence), 1, fenced),
    fence = GREATEST(fence, VALUES(fence));
  SET v_n = ROW_COUNT();
  IF v_unlogged = 1 THEN
    SET SESSION sql_log_bin = 1;
    SET v_unlogged = 0;
  END IF;
  -- The full name of a hashed GET_LOCK name, once per name (list() shows it).
  INSERT IGNORE INTO sqlock_advisory_names (lock_name, name)
  SELECT sqlock_lock_name(r.name), r.name
    FROM JSON_TABLE(p_holds, '$[*]' COLUMNS (
           name TEXT CHARACTER SET utf8mb4 PATH '$.name')) AS r
   WHERE r.name IS NOT NULL AND r.name <> '' AND LEFT(sqlock_lock_name(r.name), 7) = 'sqlock#';
  SELECT v_n AS recorded;
END$$

DELIMITER ;
