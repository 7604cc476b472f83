-- Deletes up to p_limit expired or free lease rows, up to p_limit expired shared or permit
-- holds (and expired writer marks and waiting requests' rows), and up to p_limit stale advisory records of each table
-- (their session no longer holds the GET_LOCK lock); one row: how many were deleted.
-- Schedule it on the server (instead of, or besides, client_options::sweep_every) with:
--   SET GLOBAL event_scheduler = ON;
--   CREATE EVENT sqlock_sweep_every_minute ON SCHEDULE EVERY 1 MINUTE
--     DO CALL sqlock_sweep(10000);
DROP PROCEDURE IF EXISTS sqlock_sweep;
DELIMITER $$
CREATE PROCEDURE sqlock_sweep(IN p_limit BIGINT)
MODIFIES SQL DATA SQL SECURITY DEFINER
BEGIN
  DECLARE v_n BIGINT DEFAULT 0;
  DECLARE v_limit BIGINT DEFAULT GREATEST(COALESCE(p_limit, 1000), 1);
  DELETE FROM sqlock_locks WHERE owner = '' OR expires_at <= sqlock_now() LIMIT v_limit;
  SET v_n = ROW_COUNT();
  DELETE FROM sqlock_holders WHERE expires_at <= sqlock_now() LIMIT v_limit;
  SET v_n = v_n + ROW_COUNT();
  DELETE FROM sqlock_writer_marks WHERE expires_at <= sqlock_now();
  DELETE FROM sqlock_waiting WHERE until <= sqlock_now() LIMIT v_limit;
  DELETE FROM sqlock_advisory
   WHERE IS_USED_LOCK(lock_name) IS NULL OR IS_USED_LOCK(lock_name) <> connection_id
   LIMIT v_limit;
  SET v_n = v_n + ROW_COUNT();
  DELETE FROM sqlock_advisory_holds
   WHERE COALESCE(IS_USED_LOCK(lock_name) = connection_id, 0) = 0
      OR (fenced = 1 AND COALESCE(IS_USED_LOCK(CONCAT('sqlock!', fence)) = connection_id, 0) = 0)
   LIMIT v_limit;
  SET v_n = v_n + ROW_COUNT();
  SELECT v_n AS deleted;
END$$
DELIMITER ;
