-- 1 when p_fence is the token of a current, unexpired lease-based hold of p_name (the
-- exclusive hold or one of its shared or permit holds).
DROP PROCEDURE IF EXISTS sqlock_fence_check;
DELIMITER $$
CREATE PROCEDURE sqlock_fence_check(
  IN p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_fence BIGINT UNSIGNED)
READS SQL DATA SQL SECURITY DEFINER
BEGIN
  SELECT EXISTS (SELECT 1 FROM sqlock_locks
                  WHERE name_key = sqlock_key(p_name) AND fence = p_fence AND owner <> ''
                    AND expires_at > sqlock_now())
      OR EXISTS (SELECT 1 FROM sqlock_holders
                  WHERE name_key = sqlock_key(p_name) AND fence = p_fence
                    AND expires_at > sqlock_now()) AS current_hold;
END$$
DELIMITER ;
