-- Owner-checked release (optimistic): keeps the row, frees it and moves its version on.
-- One row: 1 = released, 0 = nothing of ours was there (idempotent).
DROP PROCEDURE IF EXISTS sqlock_release_optimistic;
DELIMITER $$
CREATE PROCEDURE sqlock_release_optimistic(
  IN p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_owner VARBINARY(64))
MODIFIES SQL DATA SQL SECURITY DEFINER
BEGIN
  -- sqlock_now() and sqlock_key(p_name) written out: a stored function call costs more.
  UPDATE sqlock_locks SET owner = '', version = version + 1, expires_at = UTC_TIMESTAMP(6),
                          holder = ''
   WHERE name_key = IF(LENGTH(p_name) <= 255 AND LEFT(CAST(p_name AS BINARY), 1) <> X'00',
                       CAST(p_name AS BINARY), CONCAT(X'00', UNHEX(SHA2(p_name, 256))))
     AND owner = p_owner AND owner <> '';
  SELECT ROW_COUNT() > 0 AS released;
END$$
DELIMITER ;
