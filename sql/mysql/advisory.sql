-- Advisory mode: the lock is the server's GET_LOCK on sqlock_lock_name(name), held by the
-- calling session until released or until the session ends (crash, KILL, network loss).
-- A row in sqlock_advisory records owner, fence and holder for list() and fencing; it counts
-- only while its connection still holds the GET_LOCK lock. Call these on a dedicated session.

DELIMITER $$

-- Waits up to p_wait_ms in the server (GET_LOCK's timeout; 0 = one attempt). One row:
-- (fence, status) with status 'ok' or 'busy' (fence NULL). A call while this session already
-- holds the lock for the same owner returns the same fence (idempotent, no nesting).
DROP PROCEDURE IF EXISTS sqlock_advisory_acquire$$
CREATE PROCEDURE sqlock_advisory_acquire(
  IN p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_owner VARBINARY(64),
  IN p_holder TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_wait_ms BIGINT)
MODIFIES SQL DATA SQL SECURITY DEFINER
main: BEGIN
  DECLARE v_key VARBINARY(255) DEFAULT sqlock_key(p_name);
  DECLARE v_lock VARCHAR(64) CHARACTER SET ascii DEFAULT sqlock_lock_name(p_name);
  DECLARE v_got INT DEFAULT 0;
  DECLARE v_found INT DEFAULT 1;
  DECLARE v_owner VARBINARY(64);
  DECLARE v_fence BIGINT UNSIGNED;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = 0;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION
  BEGIN
    ROLLBACK;
    IF v_got = 1 THEN DO RELEASE_LOCK(v_lock); END IF;
    RESIGNAL;
  END;
  IF IS_USED_LOCK(v_lock) = CONNECTION_ID() THEN
    SELECT owner, fence INTO v_owner, v_fence FROM sqlock_advisory
     WHERE name_key = v_key AND connection_id = CONNECTION_ID();
    IF v_found = 1 AND v_owner = p_owner THEN
      SELECT v_fence AS fence, 'ok' AS status;
    ELSE
      SELECT NULL AS fence, 'busy' AS status;  -- held by this session for another owner
    END IF;
    LEAVE main;
  END IF;
  SET v_got = COALESCE(GET_LOCK(v_lock, GREATEST(COALESCE(p_wait_ms, 0), 0) / 1000.0), 0);
  IF v_got <> 1 THEN
    SELECT NULL AS fence, 'busy' AS status;
    LEAVE main;
  END IF;
  START TRANSACTION;
  CALL sqlock_next_fence(v_fence);
  INSERT INTO sqlock_advisory (name_key, name, lock_name, owner, fence, connection_id, acquired_at, holder)
  VALUES (v_key, p_name, v_lock, p_owner, v_fence, CONNECTION_ID(), sqlock_now(),
          LEFT(COALESCE(p_holder, ''), 255))
  ON DUPLICATE KEY UPDATE name = VALUES(name), lock_name = VALUES(lock_name), owner = VALUES(owner),
                          fence = VALUES(fence), connection_id = VALUES(connection_id),
                          acquired_at = VALUES(acquired_at), holder = VALUES(holder);
  COMMIT;
  SELECT v_fence AS fence, 'ok' AS status;
END$$

-- 1 while this session still holds the lock for p_owner (the lease length is not used).
DROP PROCEDURE IF EXISTS sqlock_advisory_renew$$
CREATE PROCEDURE sqlock_advisory_renew(
  IN p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_owner VARBINARY(64))
READS SQL DATA SQL SECURITY DEFINER
BEGIN
  SELECT (IS_USED_LOCK(sqlock_lock_name(p_name)) = CONNECTION_ID()
          AND EXISTS (SELECT 1 FROM sqlock_advisory
                       WHERE name_key = sqlock_key(p_name) AND owner = p_owner
                         AND connection_id = CONNECTION_ID())) AS renewed;
END$$

-- Owner-checked release on the holding session; 1 = released.
DROP PROCEDURE IF EXISTS sqlock_advisory_release$$
CREATE PROCEDURE sqlock_advisory_release(
  IN p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_owner VARBINARY(64))
MODIFIES SQL DATA SQL SECURITY DEFINER
main: BEGIN
  DECLARE v_lock VARCHAR(64) CHARACTER SET ascii DEFAULT sqlock_lock_name(p_name);
  DECLARE v_key VARBINARY(255) DEFAULT sqlock_key(p_name);
  IF COALESCE(IS_USED_LOCK(v_lock) = CONNECTION_ID(), 0) = 0
     OR NOT EXISTS (SELECT 1 FROM sqlock_advisory WHERE name_key = v_key AND owner = p_owner
                                                  AND connection_id = CONNECTION_ID()) THEN
    SELECT 0 AS released;
    LEAVE main;
  END IF;
  DELETE FROM sqlock_advisory WHERE name_key = v_key AND owner = p_owner;
  DO RELEASE_LOCK(v_lock);
  SELECT 1 AS released;
END$$

-- Held advisory locks whose name starts with p_prefix (byte comparison). Same columns as
-- sqlock_list; expires_at is NULL (the hold lives as long as its session).
DROP PROCEDURE IF EXISTS sqlock_advisory_list$$
CREATE PROCEDURE sqlock_advisory_list(IN p_prefix TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
READS SQL DATA SQL SECURITY DEFINER
BEGIN
  SELECT name, CAST(owner AS CHAR CHARACTER SET ascii) AS owner, fence,
         DATE_FORMAT(acquired_at, '%Y-%m-%dT%H:%i:%s.%fZ') AS acquired_at,
         NULL AS expires_at, 'advisory' AS mode, holder
    FROM sqlock_advisory
   WHERE IS_USED_LOCK(lock_name) = connection_id
     AND LEFT(CAST(name AS BINARY), LENGTH(p_prefix)) = CAST(p_prefix AS BINARY)
   ORDER BY CAST(name AS BINARY);
END$$

-- Administrative release: ends the holding session (KILL CONNECTION), which frees its
-- GET_LOCK locks; audited. The definer needs CONNECTION ADMIN (or SUPER) unless the holders
-- connect as the definer. One row: 1 = a holder was ended.
DROP PROCEDURE IF EXISTS sqlock_advisory_force_release$$
CREATE PROCEDURE sqlock_advisory_force_release(IN p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
MODIFIES SQL DATA SQL SECURITY DEFINER
main: BEGIN
  DECLARE v_key VARBINARY(255) DEFAULT sqlock_key(p_name);
  DECLARE v_lock VARCHAR(64) CHARACTER SET ascii DEFAULT sqlock_lock_name(p_name);
  DECLARE v_conn BIGINT UNSIGNED DEFAULT IS_USED_LOCK(v_lock);
  DECLARE v_found INT DEFAULT 1;
  DECLARE v_owner VARBINARY(64) DEFAULT '';
  DECLARE v_fence BIGINT UNSIGNED DEFAULT 0;
  DECLARE v_waited INT DEFAULT 0;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = 0;
  IF v_conn IS NULL THEN
    SELECT 0 AS released;
    LEAVE main;
  END IF;
  SELECT owner, fence INTO v_owner, v_fence FROM sqlock_advisory
   WHERE name_key = v_key AND connection_id = v_conn;
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
  DELETE FROM sqlock_advisory WHERE name_key = v_key AND connection_id = v_conn;
  INSERT INTO sqlock_audit (at, action, name, owner, fence, by_user)
  VALUES (sqlock_now(), 'advisory_force_release', p_name, v_owner, v_fence, USER());
  SELECT 1 AS released;
END$$

-- 1 when p_fence is the token of the current advisory hold of p_name.
DROP PROCEDURE IF EXISTS sqlock_advisory_fence_check$$
CREATE PROCEDURE sqlock_advisory_fence_check(
  IN p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_fence BIGINT UNSIGNED)
READS SQL DATA SQL SECURITY DEFINER
BEGIN
  SELECT EXISTS (SELECT 1 FROM sqlock_advisory
                  WHERE name_key = sqlock_key(p_name) AND fence = p_fence
                    AND IS_USED_LOCK(lock_name) = connection_id) AS current_hold;
END$$

DELIMITER ;
