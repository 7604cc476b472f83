-- Administrative release of a lease-based lock whoever holds it, every shared or permit hold
-- of it included (audited). One row: 1 = a hold
-- was removed. The holder finds out at its next renewal.
DROP PROCEDURE IF EXISTS sqlock_force_release;
DELIMITER $$
CREATE PROCEDURE sqlock_force_release(IN p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
MODIFIES SQL DATA SQL SECURITY DEFINER
main: BEGIN
  DECLARE v_key VARBINARY(255) DEFAULT sqlock_key(p_name);
  DECLARE v_found INT DEFAULT 1;
  DECLARE v_owner VARBINARY(64);
  DECLARE v_fence BIGINT UNSIGNED;
  DECLARE v_shared BIGINT DEFAULT 0;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = 0;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  START TRANSACTION;
  -- Shared and permit holds (one audit row per hold), and a waiting writer's mark.
  INSERT INTO sqlock_audit (at, action, name, owner, fence, by_user)
  SELECT sqlock_now(), 'force_release', p_name, owner, fence, USER()
    FROM sqlock_holders WHERE name_key = v_key AND expires_at > sqlock_now();
  SET v_shared = ROW_COUNT();
  DELETE FROM sqlock_holders WHERE name_key = v_key;
  DELETE FROM sqlock_writer_marks WHERE name_key = v_key;
  SELECT owner, fence INTO v_owner, v_fence FROM sqlock_locks
   WHERE name_key = v_key AND owner <> '' FOR UPDATE;
  IF v_found = 0 THEN
    COMMIT;
    SELECT v_shared > 0 AS released;
    LEAVE main;
  END IF;
  DELETE FROM sqlock_locks WHERE name_key = v_key;
  INSERT INTO sqlock_audit (at, action, name, owner, fence, by_user)
  VALUES (sqlock_now(), 'force_release', p_name, v_owner, v_fence, USER());
  COMMIT;
  SELECT 1 AS released;
END$$
DELIMITER ;
