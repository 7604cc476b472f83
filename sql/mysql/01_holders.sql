-- Helpers of the shared and permit holds (row modes): the writer mark of a waiting exclusive
-- request; and of one name, one lock across modes (schema version 5). Installed after
-- 00_functions.sql.
DELIMITER $$

-- The end of an exclusive acquire attempt, inside its transaction: acquired (p_acquired = 1) =
-- remove this request's writer mark; busy inside a waiting acquire() call (p_mark_ms > 0) =
-- leave the mark, or move this request's own mark on, unless another waiting writer's live
-- mark is there. SQL SECURITY INVOKER: runs with the rights of the sqlock procedure calling it.
DROP PROCEDURE IF EXISTS sqlock_writer_mark$$
CREATE PROCEDURE sqlock_writer_mark(IN p_key VARBINARY(255), IN p_owner VARBINARY(64),
                                    IN p_mark_ms BIGINT, IN p_acquired INT)
MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  DECLARE v_now DATETIME(6) DEFAULT sqlock_now();
  IF p_acquired = 1 THEN
    DELETE FROM sqlock_writer_marks WHERE name_key = p_key AND owner = p_owner;
  ELSEIF COALESCE(p_mark_ms, 0) > 0 THEN
    INSERT INTO sqlock_writer_marks (name_key, owner, expires_at)
    VALUES (p_key, p_owner, v_now + INTERVAL p_mark_ms * 1000 MICROSECOND)
    ON DUPLICATE KEY UPDATE
      owner = IF(owner = VALUES(owner) OR expires_at <= v_now, VALUES(owner), owner),
      expires_at = IF(owner = VALUES(owner) OR expires_at <= v_now, VALUES(expires_at),
                      expires_at);
  END IF;
END$$

-- One name, one lock across modes (schema version 5): the row modes and advisory mode (GET_LOCK
-- on sqlock_lock_name(name)) of one database meet on the name's row of sqlock_locks.
-- A row-mode acquire, once it holds that row locked (FOR UPDATE, or the row it just inserted,
-- or its compare-and-set update), calls sqlock_advisory_has: 1 = an advisory-mode session holds
-- the name's GET_LOCK lock, and the acquire answers busy (rolling back what it wrote).
-- An advisory acquire, once its session holds the GET_LOCK lock, calls sqlock_rows_hold, whose
-- locking reads wait for a row-mode acquire of the name still in progress (it holds the row)
-- and then see its outcome; 1 = a row mode holds the name, and the advisory acquire gives the
-- lock back. Either the row-mode acquire holds the row when the advisory session takes the
-- GET_LOCK lock (then the advisory side waits for it and sees it) or it takes the row after
-- (then it finds the GET_LOCK lock used): they cannot both hold the name.
DROP FUNCTION IF EXISTS sqlock_advisory_has$$
CREATE FUNCTION sqlock_advisory_has(p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
RETURNS INT
NOT DETERMINISTIC NO SQL SQL SECURITY INVOKER
RETURN IS_USED_LOCK(sqlock_lock_name(p_name)) IS NOT NULL$$

-- Adds the name of row key p_key to sqlock_row_names (migrations/mysql/V005) before a row-mode
-- acquire looks at the name's GET_LOCK lock, once per name and server start. Kept out of the
-- binary log when the definer may (replicas hold no GET_LOCK locks). A full table sets the
-- marker row's all_names instead: every advisory acquire then reads the InnoDB tables.
DROP PROCEDURE IF EXISTS sqlock_row_name_seen$$
CREATE PROCEDURE sqlock_row_name_seen(IN p_key VARBINARY(255))
MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  DECLARE v_unlogged INT DEFAULT 0;
  DECLARE CONTINUE HANDLER FOR 1114
    UPDATE sqlock_row_names SET all_names = 1 WHERE name_key = X'FF';
  IF NOT EXISTS (SELECT 1 FROM sqlock_row_names WHERE name_key = p_key) THEN
    CALL sqlock_binlog_off(v_unlogged);
    INSERT IGNORE INTO sqlock_row_names (name_key) VALUES (p_key);
    IF v_unlogged = 1 THEN SET SESSION sql_log_bin = 1; END IF;
  END IF;
END$$

-- Lists every name a committed row holds (or held) in sqlock_row_names, then adds the marker row
-- X'FF' that lets advisory acquires trust the list (see migrations/mysql/V005). Run by
-- `sqlock migrate` (zz_row_names.sql) and after a start of the server (sqlock_fence_epoch_raise).
DROP PROCEDURE IF EXISTS sqlock_row_names_fill$$
CREATE PROCEDURE sqlock_row_names_fill()
MODIFIES SQL DATA SQL SECURITY DEFINER
BEGIN
  DECLARE v_unlogged INT DEFAULT 0;
  DECLARE v_full INT DEFAULT 0;
  DECLARE CONTINUE HANDLER FOR 1114 SET v_full = 1;
  CALL sqlock_binlog_off(v_unlogged);
  INSERT IGNORE INTO sqlock_row_names (name_key)
  SELECT name_key FROM sqlock_locks WHERE owner <> ''
  UNION SELECT name_key FROM sqlock_holders;
  IF v_full = 0 THEN
    INSERT IGNORE INTO sqlock_row_names (name_key, all_names) VALUES (X'FF', 0);
  END IF;
  IF v_full = 1 THEN
    UPDATE sqlock_row_names SET all_names = 1 WHERE name_key = X'FF';
  END IF;
  IF v_unlogged = 1 THEN SET SESSION sql_log_bin = 1; END IF;
END$$

-- 1 when a row mode holds the name of row key p_key: a live exclusive row, or a live shared or
-- permit holder (advisory mode has exclusive holds only). Locking reads (see above).
DROP FUNCTION IF EXISTS sqlock_rows_hold$$
CREATE FUNCTION sqlock_rows_hold(p_key VARBINARY(255)) RETURNS INT
NOT DETERMINISTIC READS SQL DATA SQL SECURITY INVOKER
RETURN EXISTS (SELECT 1 FROM sqlock_locks
                WHERE name_key = p_key AND owner <> '' AND expires_at > UTC_TIMESTAMP(6)
                LOCK IN SHARE MODE)
    OR EXISTS (SELECT 1 FROM sqlock_holders
                WHERE name_key = p_key AND expires_at > UTC_TIMESTAMP(6)
                LOCK IN SHARE MODE)$$

DELIMITER ;
