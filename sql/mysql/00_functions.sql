-- Helper functions and procedures of the sqlock procedures (install first). Run unchanged in
-- the `mysql` client; `sqlock migrate` splits on the DELIMITER lines exactly as the client does.
-- Each routine is dropped right before it is re-created, so a live `sqlock migrate` leaves
-- only a moment in which a call finds it missing (the library retries such calls).
DELIMITER $$

-- Row key of a lock name: its own bytes when they fit the primary key (<= 255 bytes and not
-- starting with 0x00), else 0x00 + SHA-256 of the name. Injective: two names never share a key.
DROP FUNCTION IF EXISTS sqlock_key$$
CREATE FUNCTION sqlock_key(p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
RETURNS VARBINARY(255)
DETERMINISTIC NO SQL SQL SECURITY DEFINER
RETURN IF(LENGTH(p_name) <= 255 AND LEFT(CAST(p_name AS BINARY), 1) <> X'00',
          CAST(p_name AS BINARY),
          CONCAT(X'00', UNHEX(SHA2(p_name, 256))))$$

-- GET_LOCK name of a lock name (advisory mode). GET_LOCK names are limited to 64 characters
-- and compared case-insensitively (by MySQL; MariaDB compares them exactly), so only names of
-- 1..57 characters from [a-z0-9_.:/-] are used readably ('sqlock:' + name); every other name
-- becomes 'sqlock#' + 57 hex digits of its SHA-256 (228 bits). The pattern ends with \z (the
-- very end): the usual end anchor would also match before a trailing newline. The two forms cannot meet ('#' is not in the readable alphabet of the
-- prefix), so two different names never share a lock.
DROP FUNCTION IF EXISTS sqlock_lock_name$$
CREATE FUNCTION sqlock_lock_name(p_name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
RETURNS VARCHAR(64) CHARACTER SET ascii
DETERMINISTIC NO SQL SQL SECURITY DEFINER
RETURN IF(p_name REGEXP '^[a-z0-9_.:/-]{1,57}\\z',  -- utf8mb4_bin: case-sensitive
          CONCAT('sqlock:', CAST(p_name AS CHAR CHARACTER SET ascii)),
          CONCAT('sqlock#', LEFT(SHA2(p_name, 256), 57)))$$

-- The server's clock in UTC with microseconds (NOW(6) without the session time zone).
DROP FUNCTION IF EXISTS sqlock_now$$
CREATE FUNCTION sqlock_now() RETURNS DATETIME(6)
NOT DETERMINISTIC NO SQL SQL SECURITY DEFINER
RETURN UTC_TIMESTAMP(6)$$

-- The by_user of a forced release's audit row: "ACTOR (user USER)", who forced it as the client
-- named them (at most 200 characters) beside the user the server authenticated; USER() alone
-- when no actor is named (a client of schema version 5).
DROP FUNCTION IF EXISTS sqlock_actor$$
CREATE FUNCTION sqlock_actor(p_actor TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
RETURNS VARCHAR(300) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin
NOT DETERMINISTIC NO SQL SQL SECURITY DEFINER
RETURN IF(COALESCE(p_actor, '') = '', USER(),
          LEFT(CONCAT(LEFT(p_actor, 200), ' (user ', USER(), ')'), 300))$$

-- The next fencing token of a row-mode hold, into p_fence. On MariaDB (schema version 5) the
-- one fence source of every mode: (epoch << 40) + NEXTVAL(sqlock_fence_seq), as advisory mode's
-- (migrations/mysql/V004), so fences of a name rise in one order whatever mode took them; the
-- caller makes sure of a live epoch first, outside its transaction (sqlock_fence_epoch_ready).
-- On MySQL 8 (no sequences; advisory mode draws from the same row there): the counter row,
-- locked until the acquiring transaction ends. On a Galera node the sequence and the live epoch
-- are the node's own, so fences from two nodes would not rise in one order: the counter row
-- there too, which replicates and certifies (a stale read of it fails certification and the
-- acquire is retried), offset by 2^62 so that these fences exceed every fence the schema gave
-- before it joined a cluster (epochs stay far below 2^22). A procedure, not a function, so that creating it
-- needs no log_bin_trust_function_creators; SQL SECURITY INVOKER, so that it runs with the
-- rights of the sqlock procedure calling it, and an EXECUTE-only user calling it directly is
-- refused (it has no rights on sqlock_counters).
DROP PROCEDURE IF EXISTS sqlock_next_fence$$
CREATE PROCEDURE sqlock_next_fence(OUT p_fence BIGINT UNSIGNED)
MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  IF @@version LIKE '%MariaDB%' THEN
    -- Nested: MySQL 8 has no wsrep_on (each statement is resolved when it runs).
    IF @@global.wsrep_on = 1 THEN
      UPDATE sqlock_counters SET value = LAST_INSERT_ID(value + 1) WHERE name = 'fence';
      SET p_fence = (1 << 62) + LAST_INSERT_ID();
    ELSE
      SET p_fence = (SELECT (e.epoch << 40) + NEXTVAL(sqlock_fence_seq)
                       FROM sqlock_fence_epoch_live e WHERE e.id = 1);
    END IF;
    IF p_fence IS NULL THEN
      -- The server restarted between the caller's check and now: the library retries.
      SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = 1213,
        MESSAGE_TEXT = 'sqlock: no fence epoch since the server started; try again';
    END IF;
  ELSE
    UPDATE sqlock_counters SET value = LAST_INSERT_ID(value + 1) WHERE name = 'fence';
    SET p_fence = LAST_INSERT_ID();
  END IF;
END$$

-- Before a row-mode acquire's transaction: on MariaDB, raises the fence epoch when the server
-- has none since it started (sqlock_fence_epoch_raise, which commits), so that
-- sqlock_next_fence finds one inside the transaction. Call it before SET TRANSACTION.
DROP PROCEDURE IF EXISTS sqlock_fence_epoch_ready$$
CREATE PROCEDURE sqlock_fence_epoch_ready()
MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  DECLARE v_epoch BIGINT UNSIGNED;
  IF @@version LIKE '%MariaDB%'
     AND NOT EXISTS (SELECT 1 FROM sqlock_fence_epoch_live WHERE id = 1) THEN
    CALL sqlock_fence_epoch_raise(v_epoch);
  END IF;
END$$

-- Turns the binary log off for the rest of this session's statement chain, when it is on and
-- the definer may (BINLOG ADMIN, or SUPER on older servers and MySQL); p_off = 1 when it did:
-- the caller sets sql_log_bin = 1 again after its write. For writes of the advisory records,
-- which describe GET_LOCK locks that replicas never hold. SQL SECURITY INVOKER: it runs with the
-- rights of the sqlock routine calling it (an EXECUTE-only user calling it directly is refused
-- the SET, and p_off stays 0).
DROP PROCEDURE IF EXISTS sqlock_binlog_off$$
CREATE PROCEDURE sqlock_binlog_off(OUT p_off INT)
NO SQL SQL SECURITY INVOKER
BEGIN
  DECLARE CONTINUE HANDLER FOR 1227 SET p_off = 0;  -- no BINLOG ADMIN: logged
  SET p_off = 0;
  IF @@log_bin = 1 AND @@session.sql_log_bin = 1 THEN
    SET p_off = 1;
    SET SESSION sql_log_bin = 0;
  END IF;
END$$

-- The live fence epoch of advisory holds on MariaDB, into p_epoch (migrations/mysql/V004):
-- after a start of the server (sqlock_fence_epoch_live empty) it first raises the durable epoch
-- by one in a committed transaction, then makes it the live one; otherwise it changes nothing.
-- Two callers at once may raise it twice: harmless, the live epoch only rises. The live row is kept out
-- of the binary log, so a promoted replica starts without one and raises its own.
--   CALL sqlock_fence_epoch_raise(@e);
DROP PROCEDURE IF EXISTS sqlock_fence_epoch_raise$$
CREATE PROCEDURE sqlock_fence_epoch_raise(OUT p_epoch BIGINT UNSIGNED)
MODIFIES SQL DATA SQL SECURITY DEFINER
BEGIN
  DECLARE v_unlogged INT DEFAULT 0;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION
  BEGIN
    ROLLBACK;
    IF v_unlogged = 1 THEN SET SESSION sql_log_bin = 1; END IF;
    RESIGNAL;
  END;
  SET p_epoch = (SELECT epoch FROM sqlock_fence_epoch_live WHERE id = 1);
  IF p_epoch IS NULL THEN
    START TRANSACTION;
    UPDATE sqlock_counters SET value = LAST_INSERT_ID(value + 1) WHERE name = 'fence_epoch';
    SET p_epoch = LAST_INSERT_ID();
    COMMIT;  -- durable before any fence is made from it
    CALL sqlock_row_names_fill();  -- emptied by the restart too (01_holders.sql)
    CALL sqlock_binlog_off(v_unlogged);
    INSERT INTO sqlock_fence_epoch_live (id, epoch) VALUES (1, p_epoch)
      ON DUPLICATE KEY UPDATE epoch = GREATEST(epoch, VALUES(epoch));
    IF v_unlogged = 1 THEN
      SET SESSION sql_log_bin = 1;
      SET v_unlogged = 0;
    END IF;
  END IF;
END$$

DELIMITER ;
