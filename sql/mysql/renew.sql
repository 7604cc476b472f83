-- Renew (pessimistic and optimistic, every kind): extend our unexpired hold on the server's
-- clock.
-- One row: (renewed) 1 = renewed, 0 = lost (expired, taken over or forced).
DROP PROCEDURE IF EXISTS sqlock_renew;
DELIMITER $$
CREATE PROCEDURE sqlock_renew(
  IN p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_owner VARBINARY(64),
  IN p_lease_ms BIGINT)
MODIFIES SQL DATA SQL SECURITY DEFINER
BEGIN
  DECLARE v_now DATETIME(6) DEFAULT sqlock_now();
  DECLARE v_n BIGINT DEFAULT 0;
  IF p_lease_ms IS NULL OR p_lease_ms <= 0 THEN
    SIGNAL SQLSTATE '22023' SET MESSAGE_TEXT = 'sqlock: lease must be > 0 ms';
  END IF;
  UPDATE sqlock_locks SET expires_at = v_now + INTERVAL p_lease_ms * 1000 MICROSECOND
   WHERE name_key = sqlock_key(p_name) AND owner = p_owner AND owner <> '' AND expires_at > v_now;
  SET v_n = ROW_COUNT();
  -- A shared or permit hold: only this owner's row; the name's other holders are not touched.
  UPDATE sqlock_holders SET expires_at = v_now + INTERVAL p_lease_ms * 1000 MICROSECOND
   WHERE name_key = sqlock_key(p_name) AND owner = p_owner AND expires_at > v_now;
  SELECT v_n + ROW_COUNT() > 0 AS renewed;
END$$
DELIMITER ;
