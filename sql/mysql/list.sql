-- Held (unexpired) lease-based locks whose name starts with p_prefix, compared as bytes (a
-- prefix is never a pattern): exclusive holds, then one row per shared or permit hold.
-- Columns: name, owner, fence, acquired_at, expires_at, mode, holder, kind, permits.
DROP PROCEDURE IF EXISTS sqlock_list;
DELIMITER $$
CREATE PROCEDURE sqlock_list(IN p_prefix TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
READS SQL DATA SQL SECURITY DEFINER
BEGIN
  DECLARE v_now DATETIME(6) DEFAULT sqlock_now();
  SELECT name, CAST(owner AS CHAR CHARACTER SET ascii) AS owner, fence,
         DATE_FORMAT(acquired_at, '%Y-%m-%dT%H:%i:%s.%fZ') AS acquired_at,
         DATE_FORMAT(expires_at, '%Y-%m-%dT%H:%i:%s.%fZ') AS expires_at, mode, holder,
         'exclusive' AS kind, 0 AS permits
    FROM sqlock_locks
   WHERE owner <> '' AND expires_at > v_now
     AND LEFT(CAST(name AS BINARY), LENGTH(p_prefix)) = CAST(p_prefix AS BINARY)
  UNION ALL
  SELECT name, CAST(owner AS CHAR CHARACTER SET ascii), fence,
         DATE_FORMAT(acquired_at, '%Y-%m-%dT%H:%i:%s.%fZ'),
         DATE_FORMAT(expires_at, '%Y-%m-%dT%H:%i:%s.%fZ'), mode, holder, kind, permits
    FROM sqlock_holders
   WHERE expires_at > v_now
     AND LEFT(CAST(name AS BINARY), LENGTH(p_prefix)) = CAST(p_prefix AS BINARY)
   ORDER BY CAST(name AS BINARY), fence;
END$$
DELIMITER ;
