-- Optimistic acquire: read the row without locking, then claim it with a compare-and-set on
-- its version (and on it still being free or expired). A lost compare-and-set returns status
-- 'retry' and the library tries again with jittered backoff. The row of a name stays after
-- release (owner ''). A call by the current owner returns its fence (idempotent). Refused while
-- a shared or permit hold of the name is live; a shared acquire moves the row's version on, so
-- a compare-and-set that read the version before it fails. A busy attempt with p_mark_ms > 0
-- leaves a writer mark (sqlock_writer_mark in 01_holders.sql). Busy too while advisory mode
-- holds the name (one name, one lock: 01_holders.sql).
-- One result row: (fence, status) with status 'ok', 'busy' (fence NULL) or 'retry' (also once
-- after the fence epoch was raised: the first acquire since the server started).
DROP PROCEDURE IF EXISTS sqlock_acquire_exclusive_optimistic;
DELIMITER $$
CREATE PROCEDURE sqlock_acquire_exclusive_optimistic(
  IN p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_owner VARBINARY(64),
  IN p_lease_ms BIGINT,
  IN p_holder TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_mark_ms BIGINT)
MODIFIES SQL DATA SQL SECURITY DEFINER
main: BEGIN
  -- The helpers of 00_functions.sql and 01_holders.sql are written out on the common path, as
  -- in acquire_pessimistic.sql (each routine call and each statement costs the server).
  DECLARE v_key VARBINARY(255) DEFAULT
    IF(LENGTH(p_name) <= 255 AND LEFT(CAST(p_name AS BINARY), 1) <> X'00',
       CAST(p_name AS BINARY), CONCAT(X'00', UNHEX(SHA2(p_name, 256))));
  DECLARE v_now DATETIME(6);
  DECLARE v_found INT DEFAULT 1;
  DECLARE v_owner VARBINARY(64);
  DECLARE v_fence BIGINT UNSIGNED;
  DECLARE v_version BIGINT UNSIGNED;
  DECLARE v_expires DATETIME(6);
  DECLARE v_shared INT;
  DECLARE v_listed INT;
  DECLARE v_marked INT;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = 0;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  IF p_lease_ms IS NULL OR p_lease_ms <= 0 THEN
    SIGNAL SQLSTATE '22023' SET MESSAGE_TEXT = 'sqlock: lease must be > 0 ms';
  END IF;
  -- In one statement: the row, the time, a live shared or permit hold of the name, whether the
  -- name is in sqlock_row_names already and whether a writer mark of the name is there.
  SELECT owner, fence, version, expires_at, UTC_TIMESTAMP(6),
         EXISTS (SELECT 1 FROM sqlock_holders h WHERE h.name_key = v_key
                                                  AND h.expires_at > UTC_TIMESTAMP(6)),
         EXISTS (SELECT 1 FROM sqlock_row_names r WHERE r.name_key = v_key),
         EXISTS (SELECT 1 FROM sqlock_writer_marks m WHERE m.name_key = v_key)
    INTO v_owner, v_fence, v_version, v_expires, v_now, v_shared, v_listed, v_marked
    FROM sqlock_locks WHERE name_key = v_key;
  IF v_found = 0 THEN  -- first use of the name: create its free row, then claim it below
    INSERT IGNORE INTO sqlock_locks (name_key, name, owner, fence, version, acquired_at, expires_at, mode, holder)
    VALUES (v_key, p_name, '', 0, 0, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), 'optimistic', '');
    SET v_found = 1;
    SELECT owner, fence, version, expires_at, UTC_TIMESTAMP(6),
           EXISTS (SELECT 1 FROM sqlock_holders h WHERE h.name_key = v_key
                                                    AND h.expires_at > UTC_TIMESTAMP(6)),
           EXISTS (SELECT 1 FROM sqlock_row_names r WHERE r.name_key = v_key),
           EXISTS (SELECT 1 FROM sqlock_writer_marks m WHERE m.name_key = v_key)
      INTO v_owner, v_fence, v_version, v_expires, v_now, v_shared, v_listed, v_marked
      FROM sqlock_locks WHERE name_key = v_key;
    IF v_found = 0 THEN  -- swept in between
      SELECT NULL AS fence, 'retry' AS status;
      LEAVE main;
    END IF;
  END IF;
  IF v_owner = p_owner AND v_expires > v_now THEN
    SELECT v_fence AS fence, 'ok' AS status;
    LEAVE main;
  END IF;
  IF (v_owner <> '' AND v_expires > v_now) OR v_shared THEN
    CALL sqlock_writer_mark(v_key, p_owner, p_mark_ms, 0);
    SELECT NULL AS fence, 'busy' AS status;
    LEAVE main;
  END IF;
  -- The name listed before the look at its GET_LOCK lock, once per name and server start
  -- (sqlock_row_name_seen in 01_holders.sql).
  IF v_listed = 0 THEN
    CALL sqlock_row_name_seen(v_key);
  END IF;
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  UPDATE sqlock_locks
     SET owner = p_owner, version = version + 1, acquired_at = v_now,
         expires_at = v_now + INTERVAL p_lease_ms * 1000 MICROSECOND,
         mode = 'optimistic', holder = LEFT(COALESCE(p_holder, ''), 255)
   WHERE name_key = v_key AND version = v_version
     AND (owner = '' OR expires_at <= v_now);
  IF ROW_COUNT() = 0 THEN
    ROLLBACK;
    SELECT NULL AS fence, 'retry' AS status;
    LEAVE main;
  END IF;
  -- The row is locked by the update: an advisory-mode holder of the name makes this attempt
  -- busy (sqlock_advisory_has in 01_holders.sql, written out).
  IF IS_USED_LOCK(IF(p_name REGEXP '^[a-z0-9_.:/-]{1,57}\\z',
                     CONCAT('sqlock:', CAST(p_name AS CHAR CHARACTER SET ascii)),
                     CONCAT('sqlock#', LEFT(SHA2(p_name, 256), 57)))) IS NOT NULL THEN
    ROLLBACK;
    SELECT NULL AS fence, 'busy' AS status;
    LEAVE main;
  END IF;
  -- The fence, as in acquire_pessimistic.sql: the sequence on MariaDB outside Galera (no live
  -- epoch: raised outside the transaction, and the caller tries again), else the procedure.
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
     SET fence = v_fence, acquired_at = UTC_TIMESTAMP(6),
         expires_at = UTC_TIMESTAMP(6) + INTERVAL p_lease_ms * 1000 MICROSECOND
   WHERE name_key = v_key;
  IF v_marked THEN  -- this request's mark, if it left one (sqlock_writer_mark, acquired)
    DELETE FROM sqlock_writer_marks WHERE name_key = v_key AND owner = p_owner;
  END IF;
  COMMIT;
  SELECT v_fence AS fence, 'ok' AS status;
END$$
DELIMITER ;

-- The version-1 signature (no writer mark), for clients of earlier versions.
DROP PROCEDURE IF EXISTS sqlock_acquire_optimistic;
DELIMITER $$
CREATE PROCEDURE sqlock_acquire_optimistic(
  IN p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_owner VARBINARY(64),
  IN p_lease_ms BIGINT,
  IN p_holder TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
MODIFIES SQL DATA SQL SECURITY DEFINER
CALL sqlock_acquire_exclusive_optimistic(p_name, p_owner, p_lease_ms, p_holder, 0)$$
DELIMITER ;
