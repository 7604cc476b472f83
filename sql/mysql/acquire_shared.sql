-- Shared or permit acquire, both row modes: p_kind 'shared', or 'permit' with p_permits (every
-- user of a name must give the same number). One row per hold in sqlock_holders. The name's
-- sqlock_locks row is locked first (created free when missing), so the acquires of one name, of
-- every kind, run one at a time; its version moves on, so an optimistic exclusive acquire that
-- read the row before fails its compare-and-set. Refused ('busy') while an exclusive hold of
-- the name is live, while a waiting exclusive request's mark is, and for a permit while
-- p_permits holds are live, or while advisory mode holds the name (one name, one lock:
-- 01_holders.sql); expired holds and marks never count (server clock).
-- One result row: (fence, status) with status 'ok', 'busy', 'retry' (a concurrent first insert
-- of the name's row won; the caller tries again) or 'mismatch:<kind>:<permits>' when the name's
-- live holders are of another kind or number of permits (the client raises a configuration
-- error). Idempotent for one owner.
DROP PROCEDURE IF EXISTS sqlock_acquire_shared;
DELIMITER $$
CREATE PROCEDURE sqlock_acquire_shared(
  IN p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_owner VARBINARY(64),
  IN p_lease_ms BIGINT,
  IN p_holder TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_kind VARCHAR(8),
  IN p_permits BIGINT,
  IN p_mode VARCHAR(16))
MODIFIES SQL DATA SQL SECURITY DEFINER
main: BEGIN
  DECLARE v_key VARBINARY(255) DEFAULT sqlock_key(p_name);
  DECLARE v_permits BIGINT DEFAULT IF(p_kind = 'permit', p_permits, 0);
  DECLARE v_now DATETIME(6);
  DECLARE v_found INT DEFAULT 1;
  DECLARE v_dup INT DEFAULT 0;
  DECLARE v_owner VARBINARY(64);
  DECLARE v_expires DATETIME(6);
  DECLARE v_fence BIGINT UNSIGNED;
  DECLARE v_kind VARCHAR(8);
  DECLARE v_other BIGINT;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = 0;
  DECLARE CONTINUE HANDLER FOR 1062 SET v_dup = 1;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  IF p_lease_ms IS NULL OR p_lease_ms <= 0 THEN
    SIGNAL SQLSTATE '22023' SET MESSAGE_TEXT = 'sqlock: lease must be > 0 ms';
  END IF;
  IF p_kind IS NULL OR p_kind NOT IN ('shared', 'permit') OR (p_kind = 'permit' AND
     COALESCE(p_permits, 0) < 1) THEN
    SIGNAL SQLSTATE '22023'
      SET MESSAGE_TEXT = 'sqlock: kind must be shared, or permit with permits >= 1';
  END IF;
  CALL sqlock_fence_epoch_ready();  -- outside the transaction: it may commit an epoch raise
  CALL sqlock_row_name_seen(v_key);  -- before the look at the GET_LOCK lock (01_holders.sql)
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  SELECT owner, expires_at INTO v_owner, v_expires
    FROM sqlock_locks WHERE name_key = v_key FOR UPDATE;
  SET v_now = sqlock_now();
  IF v_found = 0 THEN  -- the name's free row: what the acquires of this name lock
    INSERT INTO sqlock_locks (name_key, name, owner, fence, version, acquired_at, expires_at, mode, holder)
    VALUES (v_key, p_name, '', 0, 0, v_now, v_now, p_mode, '');
    IF v_dup = 1 THEN
      ROLLBACK;
      SELECT NULL AS fence, 'retry' AS status;
      LEAVE main;
    END IF;
    SET v_owner = '';
  END IF;
  SET v_found = 1;
  SELECT fence INTO v_fence FROM sqlock_holders
   WHERE name_key = v_key AND owner = p_owner AND expires_at > v_now;
  IF v_found = 1 THEN  -- our own hold (a retried call)
    COMMIT;
    SELECT v_fence AS fence, 'ok' AS status;
    LEAVE main;
  END IF;
  DELETE FROM sqlock_holders WHERE name_key = v_key AND expires_at <= v_now;
  SET v_found = 1;
  SELECT kind, permits INTO v_kind, v_other FROM sqlock_holders
   WHERE name_key = v_key AND (kind <> p_kind OR permits <> v_permits) LIMIT 1;
  IF v_found = 1 THEN
    COMMIT;
    SELECT NULL AS fence, CONCAT('mismatch:', v_kind, ':', v_other) AS status;
    LEAVE main;
  END IF;
  IF (v_owner <> '' AND v_expires > v_now)
     OR EXISTS (SELECT 1 FROM sqlock_writer_marks WHERE name_key = v_key AND expires_at > v_now)
     OR (p_kind = 'permit' AND
         (SELECT COUNT(*) FROM sqlock_holders WHERE name_key = v_key) >= v_permits)
     -- the row is locked: an advisory-mode (exclusive) holder of the name (01_holders.sql)
     OR sqlock_advisory_has(p_name) THEN
    COMMIT;
    SELECT NULL AS fence, 'busy' AS status;
    LEAVE main;
  END IF;
  CALL sqlock_next_fence(v_fence);
  SET v_now = sqlock_now();  -- the lease starts now, after any wait for the counter row
  INSERT INTO sqlock_holders (name_key, owner, name, kind, permits, fence, acquired_at,
                              expires_at, mode, holder)
  VALUES (v_key, p_owner, p_name, p_kind, v_permits, v_fence, v_now,
          v_now + INTERVAL p_lease_ms * 1000 MICROSECOND, p_mode,
          LEFT(COALESCE(p_holder, ''), 255));
  UPDATE sqlock_locks SET version = version + 1 WHERE name_key = v_key;
  COMMIT;
  SELECT v_fence AS fence, 'ok' AS status;
END$$
DELIMITER ;

-- Owner-checked release of a shared or permit hold: deletes only our row. One row: 1 =
-- released, 0 = nothing of ours was there (idempotent).
DROP PROCEDURE IF EXISTS sqlock_release_shared;
DELIMITER $$
CREATE PROCEDURE sqlock_release_shared(
  IN p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_owner VARBINARY(64))
MODIFIES SQL DATA SQL SECURITY DEFINER
BEGIN
  DELETE FROM sqlock_holders WHERE name_key = sqlock_key(p_name) AND owner = p_owner;
  SELECT ROW_COUNT() > 0 AS released;
END$$
DELIMITER ;

-- Removes the writer mark of an exclusive acquire() call that ended without the lock.
-- One row: 1 = there was a mark.
DROP PROCEDURE IF EXISTS sqlock_clear_mark;
DELIMITER $$
CREATE PROCEDURE sqlock_clear_mark(
  IN p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_owner VARBINARY(64))
MODIFIES SQL DATA SQL SECURITY DEFINER
BEGIN
  DELETE FROM sqlock_writer_marks WHERE name_key = sqlock_key(p_name) AND owner = p_owner;
  SELECT ROW_COUNT() > 0 AS cleared;
END$$
DELIMITER ;

-- sqlock_clear_mark() for many calls at once (schema version 9), in one statement: what a
-- client cancelling many waits sends. p_marks: [{"name": ..., "owner": ...}, ...]. One row:
-- how many marks there were. A join: each mark found by the primary key.
--   CALL sqlock_clear_marks('[{"name": "reports", "owner": "owner-token"}]');
DROP PROCEDURE IF EXISTS sqlock_clear_marks;
DELIMITER $$
CREATE PROCEDURE sqlock_clear_marks(IN p_marks LONGTEXT CHARACTER SET utf8mb4)
MODIFIES SQL DATA SQL SECURITY DEFINER
BEGIN
  DELETE m
    FROM JSON_TABLE(p_marks, '$[*]' COLUMNS (
           name TEXT CHARACTER SET utf8mb4 PATH '$.name',
           owner VARCHAR(64) CHARACTER SET ascii PATH '$.owner')) AS e
    JOIN sqlock_writer_marks m
      ON m.name_key = sqlock_key(e.name) AND m.owner = CAST(e.owner AS BINARY)
   WHERE e.name IS NOT NULL AND e.owner IS NOT NULL;
  SELECT ROW_COUNT() AS cleared;
END$$
DELIMITER ;
