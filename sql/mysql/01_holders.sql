-- Helper of the shared and permit holds (row modes): the writer mark of a waiting exclusive
-- request. Installed after 00_functions.sql.
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

DELIMITER ;
