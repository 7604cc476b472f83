-- Advisory mode: the lock is the server's GET_LOCK on sqlock_lock_name(name), held by the
-- calling session until released or until the session ends (crash, KILL, network loss). One
-- session may carry many holds. The record of a hold (owner, fence, session, since when, holder)
-- is a row of the MEMORY table sqlock_advisory_holds: no redo log, no fsync. It counts only
-- while its session still holds the GET_LOCK lock (IS_USED_LOCK(lock_name) = connection_id)
-- and, for a hold that also holds its fence as the lock 'sqlock!<fence>' (fenced = 1: every
-- hold taken since schema version 4), that one too. The library takes its holds on MariaDB with
-- the lean pair of advisory_session.sql and records them later; the procedures here serve every
-- other caller, and the library on MySQL 8.
-- Fencing tokens come from the sequence sqlock_fence_seq on MariaDB (its cache is shared by all
-- sessions and written to disk once per 1000 values), above an epoch raised after every start of
-- the server (migrations/mysql/V004) and from the counter row on MySQL 8,
-- which has no sequences (a durable write per hold there). Holds taken by the version-1
-- routines (rows of the InnoDB table sqlock_advisory) still count until they end.

DELIMITER $$

-- Waits up to p_wait_ms in the server (GET_LOCK's timeout; 0 = one attempt). One row:
-- (fence, status, lock_name) with status 'ok' or 'busy' (fence NULL) and the GET_LOCK name. A
-- call while this session already holds the lock for the same owner returns the same fence
-- (idempotent, no nesting); for another owner (another hold sharing the session) it answers
-- busy. The record it writes stays after a plain RELEASE_LOCK(lock_name) (the library's
-- release: no write at all); such a stale record is ignored everywhere (its session no longer
-- holds the lock), replaced by the name's next acquisition, and deleted by sqlock_sweep or when
-- the MEMORY table is full.
DROP PROCEDURE IF EXISTS sqlock_advisory_acquire$$
CREATE PROCEDURE sqlock_advisory_acquire(
  IN p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_owner VARBINARY(64),
  IN p_holder TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_wait_ms BIGINT)
MODIFIES SQL DATA SQL SECURITY DEFINER
BEGIN
  -- sqlock_lock_name(p_name), written out: a stored function call costs more than the rest of
  -- the expression. (Each statement here costs server time on every acquisition.)
  DECLARE v_lock VARCHAR(64) CHARACTER SET ascii DEFAULT
    IF(p_name REGEXP '^[a-z0-9_.:/-]{1,57}\\z', CONCAT('sqlock:', CAST(p_name AS CHAR CHARACTER SET ascii)),
       CONCAT('sqlock#', LEFT(SHA2(p_name, 256), 57)));
  DECLARE v_got INT DEFAULT 0;  -- 1 = taken now, 2 = this session holds it already
  DECLARE v_fence BIGINT UNSIGNED;
  DECLARE v_epoch BIGINT UNSIGNED;
  DECLARE v_errno INT DEFAULT 0;
  -- With the binary log on, the record's write would be logged (and synced when sync_binlog=1)
  -- for nothing: replicas hold no GET_LOCK locks. A definer with BINLOG ADMIN (or SUPER) keeps
  -- it out of the log for this one statement; without it, it is logged.
  DECLARE v_unlogged INT DEFAULT 0;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION
  BEGIN
    GET DIAGNOSTICS CONDITION 1 v_errno = MYSQL_ERRNO;
    ROLLBACK;
    IF v_unlogged = 1 THEN SET SESSION sql_log_bin = 1; END IF;
    IF v_got = 1 THEN
      DO RELEASE_LOCK(v_lock);
      IF v_fence IS NOT NULL THEN DO RELEASE_LOCK(CONCAT('sqlock!', v_fence)); END IF;
    END IF;
    IF v_errno = 1114 THEN
      -- The MEMORY table reached max_heap_table_size: drop the stale records, and answer with a
      -- deadlock error, which the library retries.
      DELETE FROM sqlock_advisory_holds
       WHERE COALESCE(IS_USED_LOCK(lock_name) = connection_id, 0) = 0
          OR (fenced = 1
              AND COALESCE(IS_USED_LOCK(CONCAT('sqlock!', fence)) = connection_id, 0) = 0);
      SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = 1213,
        MESSAGE_TEXT = 'sqlock_advisory_holds was full: stale records deleted, try again';
    END IF;
    RESIGNAL;
  END;
  SET v_got = IF(IS_USED_LOCK(v_lock) = CONNECTION_ID(), 2,
                 COALESCE(GET_LOCK(v_lock, GREATEST(COALESCE(p_wait_ms, 0), 0) / 1000.0), 0));
  IF v_got = 1 AND sqlock_rows_hold(sqlock_key(p_name)) THEN
    -- A row mode holds the name (one name, one lock: 01_holders.sql): give the lock back.
    DO RELEASE_LOCK(v_lock);
    SET v_got = 0;
  END IF;
  IF v_got = 1 THEN
    IF @@version LIKE '%MariaDB%' THEN
      -- (epoch << 40) + the sequence; the epoch raised first after a start of the server.
      SET v_fence = (SELECT (e.epoch << 40) + NEXTVAL(sqlock_fence_seq)
                       FROM sqlock_fence_epoch_live e WHERE e.id = 1);
      IF v_fence IS NULL THEN
        CALL sqlock_fence_epoch_raise(v_epoch);
        SET v_fence = (v_epoch << 40) + NEXTVAL(sqlock_fence_seq);
      END IF;
    ELSE
      START TRANSACTION;
      CALL sqlock_next_fence(v_fence);
      COMMIT;
    END IF;
    CALL sqlock_binlog_off(v_unlogged);
    REPLACE INTO sqlock_advisory_holds (lock_name, owner, fence, connection_id, acquired_at, holder,
                                        fenced)
    VALUES (v_lock, p_owner, v_fence, CONNECTION_ID(), UTC_TIMESTAMP(6),
            LEFT(COALESCE(p_holder, ''), 255), 1);
    IF v_unlogged = 1 THEN
      SET SESSION sql_log_bin = 1;
      SET v_unlogged = 0;
    END IF;
    DO GET_LOCK(CONCAT('sqlock!', v_fence), 0);  -- the fence's lock (advisory_session.sql)
    IF LEFT(v_lock, 7) = 'sqlock#' AND NOT EXISTS (SELECT 1 FROM sqlock_advisory_names
                                                    WHERE lock_name = v_lock) THEN
      INSERT IGNORE INTO sqlock_advisory_names (lock_name, name) VALUES (v_lock, p_name);
    END IF;
    SELECT v_fence AS fence, 'ok' AS status, v_lock AS lock_name;
  ELSEIF v_got = 2 THEN
    SELECT IF(owner = p_owner, fence, NULL) AS fence, IF(owner = p_owner, 'ok', 'busy') AS status,
           v_lock AS lock_name
      FROM (SELECT owner, fence FROM sqlock_advisory_holds
             WHERE lock_name = v_lock AND connection_id = CONNECTION_ID()
               AND (fenced = 0 OR IS_USED_LOCK(CONCAT('sqlock!', fence)) = connection_id)
            UNION ALL  -- a hold of the version-1 routines
            SELECT owner, fence FROM sqlock_advisory
             WHERE name_key = sqlock_key(p_name) AND connection_id = CONNECTION_ID()
            UNION ALL
            SELECT NULL, NULL) AS h  -- held outside sqlock: busy
     LIMIT 1;
  ELSE
    SELECT NULL AS fence, 'busy' AS status, v_lock AS lock_name;
  END IF;
END$$

-- 1 while this session still holds the lock for p_owner (the lease length is not used).
DROP PROCEDURE IF EXISTS sqlock_advisory_renew$$
CREATE PROCEDURE sqlock_advisory_renew(
  IN p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_owner VARBINARY(64))
READS SQL DATA SQL SECURITY DEFINER
BEGIN
  DECLARE v_lock VARCHAR(64) CHARACTER SET ascii DEFAULT sqlock_lock_name(p_name);
  SELECT COALESCE(IS_USED_LOCK(v_lock) = CONNECTION_ID(), 0)
         AND (EXISTS (SELECT 1 FROM sqlock_advisory_holds
                       WHERE lock_name = v_lock AND owner = p_owner
                         AND connection_id = CONNECTION_ID()
                         AND (fenced = 0
                              OR IS_USED_LOCK(CONCAT('sqlock!', fence)) = connection_id))
              OR EXISTS (SELECT 1 FROM sqlock_advisory
                          WHERE name_key = sqlock_key(p_name) AND owner = p_owner
                            AND connection_id = CONNECTION_ID())) AS renewed;
END$$

-- Owner-checked release on the holding session; 1 = released. (The library releases with a
-- plain RELEASE_LOCK(lock_name) on the session it knows holds the lock for that owner.)
DROP PROCEDURE IF EXISTS sqlock_advisory_release$$
CREATE PROCEDURE sqlock_advisory_release(
  IN p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_owner VARBINARY(64))
MODIFIES SQL DATA SQL SECURITY DEFINER
main: BEGIN
  DECLARE v_lock VARCHAR(64) CHARACTER SET ascii DEFAULT sqlock_lock_name(p_name);
  DECLARE v_key VARBINARY(255);
  DECLARE v_deleted INT DEFAULT 0;
  DECLARE v_fence BIGINT UNSIGNED DEFAULT (
    SELECT fence FROM sqlock_advisory_holds
     WHERE lock_name = v_lock AND owner = p_owner AND connection_id = CONNECTION_ID()
       AND fenced = 1 AND IS_USED_LOCK(CONCAT('sqlock!', fence)) = connection_id);
  DELETE FROM sqlock_advisory_holds
   WHERE lock_name = v_lock AND owner = p_owner AND connection_id = CONNECTION_ID()
     AND (fenced = 0 OR v_fence IS NOT NULL);
  SET v_deleted = ROW_COUNT();
  IF v_deleted > 0 AND v_fence IS NOT NULL THEN
    DO RELEASE_LOCK(CONCAT('sqlock!', v_fence));
  ELSEIF v_deleted = 0 THEN
    -- Not a hold of these routines: one of the version-1 routines, or none.
    SET v_key = sqlock_key(p_name);
    IF COALESCE(IS_USED_LOCK(v_lock) = CONNECTION_ID(), 0) = 0
       OR NOT EXISTS (SELECT 1 FROM sqlock_advisory WHERE name_key = v_key AND owner = p_owner
                                                    AND connection_id = CONNECTION_ID()) THEN
      SELECT 0 AS released;
      LEAVE main;
    END IF;
    DELETE FROM sqlock_advisory WHERE name_key = v_key AND owner = p_owner;
  END IF;
  SELECT COALESCE(RELEASE_LOCK(v_lock), 0) AS released;
END$$

-- Held advisory locks whose name starts with p_prefix (byte comparison). Same columns as
-- sqlock_list; expires_at is NULL (the hold lives as long as its session). A hold taken with
-- sqlock_advisory_lock shows once it is recorded (sqlock_advisory_record).
DROP PROCEDURE IF EXISTS sqlock_advisory_list$$
CREATE PROCEDURE sqlock_advisory_list(IN p_prefix TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
READS SQL DATA SQL SECURITY DEFINER
BEGIN
  SELECT name, CAST(owner AS CHAR CHARACTER SET ascii) AS owner, fence,
         DATE_FORMAT(acquired_at, '%Y-%m-%dT%H:%i:%s.%fZ') AS acquired_at,
         NULL AS expires_at, 'advisory' AS mode, holder
    FROM (SELECT COALESCE(n.name, CONVERT(SUBSTRING(h.lock_name, 8) USING utf8mb4)) AS name,
                 h.owner, h.fence, h.acquired_at, h.holder
            FROM sqlock_advisory_holds h
            LEFT JOIN sqlock_advisory_names n ON n.lock_name = h.lock_name
           WHERE IS_USED_LOCK(h.lock_name) = h.connection_id
             AND (h.fenced = 0 OR IS_USED_LOCK(CONCAT('sqlock!', h.fence)) = h.connection_id)
          UNION ALL  -- holds of the version-1 routines
          SELECT a.name, a.owner, a.fence, a.acquired_at, a.holder
            FROM sqlock_advisory a
           WHERE IS_USED_LOCK(a.lock_name) = a.connection_id
             AND NOT EXISTS (SELECT 1 FROM sqlock_advisory_holds h
                              WHERE h.lock_name = a.lock_name
                                AND h.connection_id = a.connection_id)) AS held
   WHERE LEFT(CAST(name AS BINARY), LENGTH(p_prefix)) = CAST(p_prefix AS BINARY)
   ORDER BY CAST(name AS BINARY);
END$$

-- Administrative release: ends the holding session (KILL CONNECTION), which frees its
-- GET_LOCK locks — every hold that session carried, not only this one (the process holding
-- them is told at once: they are lost). Audited (by_user: sqlock_actor(p_actor), who forced
-- it beside USER()). The definer needs CONNECTION ADMIN (or SUPER)
-- unless the holders connect as the definer. One row: 1 = a holder was ended. (The audit row
-- has owner '' and fence 0 for a hold taken with sqlock_advisory_lock and not recorded yet.)
DROP PROCEDURE IF EXISTS sqlock_advisory_force_release_by$$
CREATE PROCEDURE sqlock_advisory_force_release_by(
  IN p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_actor TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
MODIFIES SQL DATA SQL SECURITY DEFINER
main: BEGIN
  DECLARE v_key VARBINARY(255) DEFAULT sqlock_key(p_name);
  DECLARE v_lock VARCHAR(64) CHARACTER SET ascii DEFAULT sqlock_lock_name(p_name);
  DECLARE v_conn BIGINT UNSIGNED DEFAULT IS_USED_LOCK(v_lock);
  DECLARE v_owner VARBINARY(64) DEFAULT '';
  DECLARE v_fence BIGINT UNSIGNED DEFAULT 0;
  DECLARE v_waited INT DEFAULT 0;
  IF v_conn IS NULL THEN
    SELECT 0 AS released;
    LEAVE main;
  END IF;
  SELECT COALESCE(MAX(owner), ''), COALESCE(MAX(fence), 0) INTO v_owner, v_fence
    FROM (SELECT owner, fence FROM sqlock_advisory_holds
           WHERE lock_name = v_lock AND connection_id = v_conn
             AND (fenced = 0 OR IS_USED_LOCK(CONCAT('sqlock!', fence)) = v_conn)
          UNION ALL
          SELECT owner, fence FROM sqlock_advisory
           WHERE name_key = v_key AND connection_id = v_conn) AS h;
  IF v_conn = CONNECTION_ID() THEN
    DO RELEASE_LOCK(v_lock);
  ELSE
    KILL CONNECTION v_conn;
    -- KILL only flags the session: wait (up to 5 s) until it has let go of the lock.
    WHILE IS_USED_LOCK(v_lock) = v_conn AND v_waited < 500 DO
      DO SLEEP(0.01);
      SET v_waited = v_waited + 1;
    END WHILE;
  END IF;
  DELETE FROM sqlock_advisory_holds WHERE lock_name = v_lock AND connection_id = v_conn;
  DELETE FROM sqlock_advisory WHERE name_key = v_key AND connection_id = v_conn;
  INSERT INTO sqlock_audit (at, action, name, owner, fence, by_user)
  VALUES (sqlock_now(), 'advisory_force_release', p_name, v_owner, v_fence,
          sqlock_actor(p_actor));
  SELECT 1 AS released;
END$$

-- The procedure of schema versions up to 5, which a client of those versions calls: the same
-- release, its audit row naming USER() alone.
DROP PROCEDURE IF EXISTS sqlock_advisory_force_release$$
CREATE PROCEDURE sqlock_advisory_force_release(IN p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
MODIFIES SQL DATA SQL SECURITY DEFINER
CALL sqlock_advisory_force_release_by(p_name, NULL)$$

-- 1 when p_fence is the token of the current advisory hold of p_name: the session holding the
-- name also holds the fence's lock 'sqlock!<fence>' (a hold of schema version 4 or later), or
-- the record of an older hold says so.
DROP PROCEDURE IF EXISTS sqlock_advisory_fence_check$$
CREATE PROCEDURE sqlock_advisory_fence_check(
  IN p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_fence BIGINT UNSIGNED)
READS SQL DATA SQL SECURITY DEFINER
BEGIN
  DECLARE v_lock VARCHAR(64) CHARACTER SET ascii DEFAULT sqlock_lock_name(p_name);
  DECLARE v_conn BIGINT UNSIGNED DEFAULT IS_USED_LOCK(v_lock);
  SELECT v_conn IS NOT NULL
         AND (COALESCE(IS_USED_LOCK(CONCAT('sqlock!', p_fence)) = v_conn, 0)  -- recorded or not
              OR EXISTS (SELECT 1 FROM sqlock_advisory_holds  -- a version 2-3 procedure's hold
                          WHERE lock_name = v_lock AND fence = p_fence AND connection_id = v_conn
                            AND fenced = 0)
              OR (NOT EXISTS (SELECT 1 FROM sqlock_advisory_holds
                               WHERE lock_name = v_lock AND connection_id = v_conn)
                  AND EXISTS (SELECT 1 FROM sqlock_advisory
                               WHERE name_key = sqlock_key(p_name) AND fence = p_fence
                                 AND connection_id = v_conn))) AS current_hold;
END$$

DELIMITER ;
