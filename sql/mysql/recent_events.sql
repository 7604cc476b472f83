-- The newest rows of the audit trail sqlock_audit (forced releases and sweeps), newest first, of
-- names starting with p_prefix (compared as bytes, never a pattern), at most p_limit (1..10000)
-- rows. Columns as the library reads them: at, event (an advisory-mode forced release is
-- 'force_release' with mode 'advisory'), name, owner, fence, mode, holder, actor (by_user:
-- "ACTOR (user USER)" for a release forced by a named actor), detail.
--   CALL sqlock_recent_events('orders:', 100);
DROP PROCEDURE IF EXISTS sqlock_recent_events;
DELIMITER $$
CREATE PROCEDURE sqlock_recent_events(IN p_prefix TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
                                      IN p_limit BIGINT)
READS SQL DATA SQL SECURITY DEFINER
BEGIN
  DECLARE v_limit BIGINT DEFAULT LEAST(GREATEST(COALESCE(p_limit, 100), 1), 10000);
  DECLARE v_prefix TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT COALESCE(p_prefix, '');
  SELECT DATE_FORMAT(at, '%Y-%m-%dT%H:%i:%s.%fZ') AS at,
         IF(action = 'advisory_force_release', 'force_release', action) AS event, name,
         CAST(owner AS CHAR CHARACTER SET ascii) AS owner, fence,
         IF(action LIKE 'advisory%', 'advisory', NULL) AS mode, NULL AS holder,
         by_user AS actor, NULL AS detail
    FROM sqlock_audit
   WHERE LEFT(CAST(name AS BINARY), LENGTH(v_prefix)) = CAST(v_prefix AS BINARY)
   ORDER BY id DESC
   LIMIT v_limit;
END$$
DELIMITER ;
