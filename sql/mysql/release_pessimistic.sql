-- Owner-checked release (pessimistic): frees only our row and keeps it (owner '', as optimistic
-- mode does), so that the next acquire of the name updates it instead of inserting a row and
-- then updating it; sqlock_sweep deletes free rows. One row: 1 = released, 0 = nothing of ours
-- was there (idempotent).
DROP PROCEDURE IF EXISTS sqlock_release_pessimistic;
DELIMITER $$
CREATE PROCEDURE sqlock_release_pessimistic(
  IN p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_owner VARBINARY(64))
MODIFIES SQL DATA SQL SECURITY DEFINER
BEGIN
  -- sqlock_key(p_name) written out: a stored function call costs more than the expression.
  UPDATE sqlock_locks SET owner = '', version = version + 1, expires_at = UTC_TIMESTAMP(6),
                          holder = ''
   WHERE name_key = IF(LENGTH(p_name) <= 255 AND LEFT(CAST(p_name AS BINARY), 1) <> X'00',
                       CAST(p_name AS BINARY), CONCAT(X'00', UNHEX(SHA2(p_name, 256))))
     AND owner = p_owner AND owner <> '';
  SELECT ROW_COUNT() > 0 AS released;
END$$
DELIMITER ;
