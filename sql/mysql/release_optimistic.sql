-- Owner-checked release (optimistic): keeps the row, frees it and moves its version on.
-- One row: 1 = released, 0 = nothing of ours was there (idempotent).
DROP PROCEDURE IF EXISTS sqlock_release_optimistic;
DELIMITER $$
CREATE PROCEDURE sqlock_release_optimistic(
  IN p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_owner VARBINARY(64))
MODIFIES SQL DATA SQL SECURITY DEFINER
BEGIN
  UPDATE sqlock_locks SET owner = '', version = version + 1, expires_at = sqlock_now(), holder = ''
   WHERE name_key = sqlock_key(p_name) AND owner = p_owner AND owner <> '';
  SELECT ROW_COUNT() > 0 AS released;
END$$
DELIMITER ;
