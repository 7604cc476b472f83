-- Administrative release of a lease-based lock whoever holds it, every shared or permit hold
-- of it included (audited: by_user is sqlock_actor(p_actor), who forced it beside USER()). One
-- row: 1 = a hold was removed. The holder finds out at its next renewal.
--   CALL sqlock_force_release_by('orders:42', 'alice@ops-1');
DROP PROCEDURE IF EXISTS sqlock_force_release_by;
DELIMITER $$
CREATE PROCEDURE sqlock_force_release_by(
  IN p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_actor TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
MODIFIES SQL DATA SQL SECURITY DEFINER
main: BEGIN
  DECLARE v_by VARCHAR(300) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT sqlock_actor(p_actor);
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
  SELECT sqlock_now(), 'force_release', p_name, owner, fence, v_by
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
  VALUES (sqlock_now(), 'force_release', p_name, v_owner, v_fence, v_by);
  COMMIT;
  SELECT 1 AS released;
END$$

-- The procedure of schema versions up to 5, which a client of those versions calls: the same
-- release, its audit rows naming USER() alone.
DROP PROCEDURE IF EXISTS sqlock_force_release$$
CREATE PROCEDURE sqlock_force_release(IN p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
MODIFIES SQL DATA SQL SECURITY DEFINER
CALL sqlock_force_release_by(p_name, NULL)$$
DELIMITER ;
