-- The requests waiting for a lock (schema version 8, sqlock_waiting): what a client writes of
-- its waiting requests, and what `sqlock list --waiting` and the admin page read.
DELIMITER $$

-- Writes a batch of a client's waiting requests. p_waits is a JSON object:
--   {"waiting": [{name, owner, holder, kind, permits, age_ms}, ...],
--    "ended":   [{name, owner}, ...]}
-- `waiting`: requests that wait (`age_ms` milliseconds so far, measured on the client's
-- monotonic clock), written or written again, each row then stale p_life_ms from now;
-- `ended`: requests that stopped waiting (granted or given up), deleted. Kept out of the binary
-- log where the definer may (as the advisory records): the rows describe this server's clients.
-- One row: the rows written and deleted.
--   CALL sqlock_record_waits('{"waiting": [{"name": "orders:42", "owner": "owner-token",
--     "holder": "host:pid:app", "kind": "exclusive", "permits": 0, "age_ms": 10}],
--     "ended": []}', 90000);
DROP PROCEDURE IF EXISTS sqlock_record_waits$$
CREATE PROCEDURE sqlock_record_waits(IN p_waits LONGTEXT CHARACTER SET utf8mb4,
                                     IN p_life_ms BIGINT)
MODIFIES SQL DATA SQL SECURITY DEFINER
BEGIN
  DECLARE v_n BIGINT DEFAULT 0;
  DECLARE v_now DATETIME(6) DEFAULT sqlock_now();
  DECLARE v_unlogged INT DEFAULT 0;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION
  BEGIN
    IF v_unlogged = 1 THEN SET SESSION sql_log_bin = 1; END IF;
    RESIGNAL;
  END;
  CALL sqlock_binlog_off(v_unlogged);
  -- A join, each ended request found by the primary key: MariaDB runs `(name_key, owner) IN
  -- (SELECT ... FROM JSON_TABLE ...)` as a dependent subquery, the whole batch parsed again
  -- for every row of the table (10,000 ended against 10,000 rows: minutes).
  DELETE w
    FROM JSON_TABLE(p_waits, '$.ended[*]' COLUMNS (
           name TEXT CHARACTER SET utf8mb4 PATH '$.name',
           owner VARCHAR(64) CHARACTER SET ascii PATH '$.owner')) AS e
    JOIN sqlock_waiting w
      ON w.name_key = sqlock_key(e.name) AND w.owner = CAST(e.owner AS BINARY)
   WHERE e.name IS NOT NULL AND e.owner IS NOT NULL;
  SET v_n = ROW_COUNT();
  INSERT INTO sqlock_waiting (name_key, owner, name, holder, kind, permits, since, until)
  SELECT sqlock_key(r.name), CAST(r.owner AS BINARY), r.name, LEFT(COALESCE(r.holder, ''), 255),
         IF(r.kind IN ('shared', 'permit'), r.kind, 'exclusive'), GREATEST(COALESCE(r.permits, 0), 0),
         v_now - INTERVAL GREATEST(COALESCE(r.age_ms, 0), 0) * 1000 MICROSECOND,
         v_now + INTERVAL LEAST(GREATEST(COALESCE(p_life_ms, 0), 0), 3600000) * 1000 MICROSECOND
    FROM JSON_TABLE(p_waits, '$.waiting[*]' COLUMNS (
           name TEXT CHARACTER SET utf8mb4 PATH '$.name',
           owner VARCHAR(64) CHARACTER SET ascii PATH '$.owner',
           holder VARCHAR(255) CHARACTER SET utf8mb4 PATH '$.holder',
           kind VARCHAR(16) CHARACTER SET ascii PATH '$.kind',
           permits BIGINT PATH '$.permits',
           age_ms BIGINT PATH '$.age_ms')) AS r
   WHERE r.name IS NOT NULL AND r.owner IS NOT NULL AND r.owner <> ''
  ON DUPLICATE KEY UPDATE until = VALUES(until);
  SET v_n = v_n + ROW_COUNT();
  IF v_unlogged = 1 THEN
    SET SESSION sql_log_bin = 1;
    SET v_unlogged = 0;
  END IF;
  SELECT v_n AS recorded;
END$$

-- The requests waiting for locks whose name starts with p_prefix (compared as bytes, never a
-- pattern), by name and then by when each began waiting. A request whose owner holds the name
-- by now (its end not written yet) is left out.
-- Columns: name, owner, holder, kind, permits, since.
--   CALL sqlock_list_waiting('orders:');
DROP PROCEDURE IF EXISTS sqlock_list_waiting$$
CREATE PROCEDURE sqlock_list_waiting(IN p_prefix TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
READS SQL DATA SQL SECURITY DEFINER
BEGIN
  DECLARE v_now DATETIME(6) DEFAULT sqlock_now();
  SELECT w.name, CAST(w.owner AS CHAR CHARACTER SET ascii) AS owner, w.holder, w.kind, w.permits,
         DATE_FORMAT(w.since, '%Y-%m-%dT%H:%i:%s.%fZ') AS since
    FROM sqlock_waiting w
   WHERE w.until > v_now
     AND LEFT(CAST(w.name AS BINARY), LENGTH(p_prefix)) = CAST(p_prefix AS BINARY)
     AND NOT EXISTS (SELECT 1 FROM sqlock_locks l
                      WHERE l.name_key = w.name_key AND l.owner = w.owner
                        AND l.expires_at > v_now)
     AND NOT EXISTS (SELECT 1 FROM sqlock_holders h
                      WHERE h.name_key = w.name_key AND h.owner = w.owner
                        AND h.expires_at > v_now)
     AND NOT EXISTS (SELECT 1 FROM sqlock_advisory_holds a
                      WHERE a.lock_name = sqlock_lock_name(w.name) AND a.owner = w.owner
                        AND COALESCE(IS_USED_LOCK(a.lock_name) = a.connection_id, 0) = 1)
   ORDER BY CAST(w.name AS BINARY), w.since, w.owner;
END$$

DELIMITER ;
