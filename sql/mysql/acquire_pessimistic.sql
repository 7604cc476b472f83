-- Pessimistic exclusive acquire: lock the name's row (FOR UPDATE), take it when free or expired
-- and no shared or permit hold of the name is live, keep it when it is already ours (a retried
-- call after a lost reply returns the same fence). A busy attempt with p_mark_ms > 0 (a client
-- that will wait) leaves a writer mark (sqlock_writer_mark in 01_holders.sql). Busy too while
-- advisory mode holds the name (one name, one lock: 01_holders.sql).
-- One result row: (fence, status) with status 'ok', 'busy' (fence NULL) or 'retry' (a
-- concurrent first insert of the same name won, or the fence epoch was raised just now: the
-- caller tries again).
-- READ COMMITTED: no gap locks on absent names, so first inserts do not deadlock each other.
DROP PROCEDURE IF EXISTS sqlock_acquire_exclusive_pessimistic;
DELIMITER $$
CREATE PROCEDURE sqlock_acquire_exclusive_pessimistic(
  IN p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_owner VARBINARY(64),
  IN p_lease_ms BIGINT,
  IN p_holder TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_mark_ms BIGINT)
MODIFIES SQL DATA SQL SECURITY DEFINER
main: BEGIN
  -- The helpers of 00_functions.sql and 01_holders.sql are written out on the common path
  -- (sqlock_key, sqlock_now, sqlock_advisory_has, the MariaDB branch of sqlock_next_fence, the
  -- acquired end of sqlock_writer_mark): each stored routine call, and each statement, costs
  -- the server more than the row work of the pair. The rare paths still call them.
  DECLARE v_key VARBINARY(255) DEFAULT
    IF(LENGTH(p_name) <= 255 AND LEFT(CAST(p_name AS BINARY), 1) <> X'00',
       CAST(p_name AS BINARY), CONCAT(X'00', UNHEX(SHA2(p_name, 256))));
  DECLARE v_now DATETIME(6);
  DECLARE v_found INT DEFAULT 1;
  DECLARE v_dup INT DEFAULT 0;
  DECLARE v_owner VARBINARY(64);
  DECLARE v_fence BIGINT UNSIGNED;
  DECLARE v_expires DATETIME(6);
  DECLARE v_shared INT;
  DECLARE v_marked INT;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = 0;
  DECLARE CONTINUE HANDLER FOR 1062 SET v_dup = 1;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  IF p_lease_ms IS NULL OR p_lease_ms <= 0 THEN
    SIGNAL SQLSTATE '22023' SET MESSAGE_TEXT = 'sqlock: lease must be > 0 ms';
  END IF;
  -- The name listed before the look at its GET_LOCK lock, once per name and server start
  -- (sqlock_row_name_seen, 01_holders.sql: outside the transaction, for it may switch the
  -- binary log off for its write).
  IF NOT EXISTS (SELECT 1 FROM sqlock_row_names WHERE name_key = v_key) THEN
    CALL sqlock_row_name_seen(v_key);
  END IF;
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  SELECT owner, fence, expires_at INTO v_owner, v_fence, v_expires
    FROM sqlock_locks WHERE name_key = v_key FOR UPDATE;
  -- In one statement: the time, a live shared or permit hold of the name, and whether a writer
  -- mark of the name is there (01_holders.sql).
  SELECT UTC_TIMESTAMP(6),
         EXISTS (SELECT 1 FROM sqlock_holders WHERE name_key = v_key
                                                AND expires_at > UTC_TIMESTAMP(6)),
         EXISTS (SELECT 1 FROM sqlock_writer_marks WHERE name_key = v_key)
    INTO v_now, v_shared, v_marked;
  IF v_found = 1 AND v_owner = p_owner AND v_expires > v_now THEN
    COMMIT;
    SELECT v_fence AS fence, 'ok' AS status;
    LEAVE main;
  END IF;
  IF (v_found = 1 AND v_owner <> '' AND v_expires > v_now) OR v_shared THEN
    CALL sqlock_writer_mark(v_key, p_owner, p_mark_ms, 0);
    COMMIT;
    SELECT NULL AS fence, 'busy' AS status;
    LEAVE main;
  END IF;
  IF v_found = 0 THEN
    INSERT INTO sqlock_locks (name_key, name, owner, fence, version, acquired_at, expires_at, mode, holder)
    VALUES (v_key, p_name, '', 0, 0, v_now, v_now, 'pessimistic', '');
    IF v_dup = 1 THEN
      ROLLBACK;
      SELECT NULL AS fence, 'retry' AS status;
      LEAVE main;
    END IF;
  END IF;
  -- The row is locked (or just inserted) by this transaction: an advisory-mode holder of the
  -- name makes this attempt busy (sqlock_advisory_has in 01_holders.sql, written out).
  IF IS_USED_LOCK(IF(p_name REGEXP '^[a-z0-9_.:/-]{1,57}\\z',
                     CONCAT('sqlock:', CAST(p_name AS CHAR CHARACTER SET ascii)),
                     CONCAT('sqlock#', LEFT(SHA2(p_name, 256), 57)))) IS NOT NULL THEN
    ROLLBACK;
    SELECT NULL AS fence, 'busy' AS status;
    LEAVE main;
  END IF;
  -- The fence (sqlock_next_fence): on MariaDB outside Galera from the sequence here. No live
  -- epoch (the first acquire since the server started): raised outside the transaction
  -- (sqlock_fence_epoch_ready commits), and the caller tries again. Elsewhere the procedure
  -- (Galera, MySQL 8: the counter row, which needs no epoch).
  SET v_fence = NULL;
  IF @@version LIKE '%MariaDB%' THEN
    IF @@global.wsrep_on = 0 THEN
      SET v_fence = (SELECT (e.epoch << 40) + NEXTVAL(sqlock_fence_seq)
                       FROM sqlock_fence_epoch_live e WHERE e.id = 1);
      IF v_fence IS NULL THEN
        ROLLBACK;
        CALL sqlock_fence_epoch_ready();
        SELECT NULL AS fence, 'retry' AS status;
        LEAVE main;
      END IF;
    END IF;
  END IF;
  IF v_fence IS NULL THEN
    CALL sqlock_next_fence(v_fence);
  END IF;
  -- The lease starts now (the statement's time), after any wait for the counter row.
  UPDATE sqlock_locks
     SET name = p_name, owner = p_owner, fence = v_fence, version = version + 1,
         acquired_at = UTC_TIMESTAMP(6),
         expires_at = UTC_TIMESTAMP(6) + INTERVAL p_lease_ms * 1000 MICROSECOND,
         mode = 'pessimistic', holder = LEFT(COALESCE(p_holder, ''), 255)
   WHERE name_key = v_key;
  IF v_marked THEN  -- this request's mark, if it left one (sqlock_writer_mark, acquired)
    DELETE FROM sqlock_writer_marks WHERE name_key = v_key AND owner = p_owner;
  END IF;
  COMMIT;
  SELECT v_fence AS fence, 'ok' AS status;
END$$
DELIMITER ;

-- The version-1 signature (no writer mark), for clients of earlier versions.
DROP PROCEDURE IF EXISTS sqlock_acquire_pessimistic;
DELIMITER $$
CREATE PROCEDURE sqlock_acquire_pessimistic(
  IN p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_owner VARBINARY(64),
  IN p_lease_ms BIGINT,
  IN p_holder TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
MODIFIES SQL DATA SQL SECURITY DEFINER
CALL sqlock_acquire_exclusive_pessimistic(p_name, p_owner, p_lease_ms, p_holder, 0)$$
DELIMITER ;
