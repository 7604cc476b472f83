-- sqlock schema version 2: advisory holds without a durable write per hold.
--   sqlock_advisory_holds  who holds which GET_LOCK lock (owner, fence, session, since when,
--                          holder): ENGINE=MEMORY, so writing it costs no redo log and no fsync.
--                          It is empty after a server restart, as are the GET_LOCK locks it
--                          describes (every session ended). A row counts only while its session
--                          still holds the lock (IS_USED_LOCK(lock_name) = connection_id).
--                          MEMORY tables hold at most max_heap_table_size bytes (16 MB by
--                          default: about 10,000 holds at ~1.4 kB a row); raise it for more.
--   sqlock_advisory_names  the full name of each hashed GET_LOCK name ('sqlock#' + SHA-256),
--                          written once per name (InnoDB); readable names ('sqlock:' + name)
--                          need no row.
--   sqlock_fence_seq       (MariaDB only) the fencing tokens of advisory holds: a sequence with a
--                          shared cache of 1000 values, so only every 1000th token writes to disk;
--                          values rise strictly across all sessions, and after a crash the
--                          sequence skips forward past the lost cache. It starts a million above
--                          the counter row, past any token the version-1 routines handed out or
--                          may still hand out while this migration runs. MySQL 8 has no
--                          sequences: there the advisory routines keep taking tokens from the
--                          counter row (see sql/mysql/advisory.sql).
-- The version-1 table sqlock_advisory stays: holds taken by the old routines (before this
-- migration, with their sessions still open) keep their rows, and the new routines read them
-- until those holds end.
CREATE TABLE IF NOT EXISTS sqlock_advisory_holds (
  lock_name     VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,  -- sqlock_lock_name(name)
  owner         VARBINARY(64) NOT NULL,
  fence         BIGINT UNSIGNED NOT NULL,
  connection_id BIGINT UNSIGNED NOT NULL,
  acquired_at   DATETIME(6) NOT NULL,                                       -- server time, UTC
  holder        VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  PRIMARY KEY (lock_name) USING HASH
) ENGINE = MEMORY;

CREATE TABLE IF NOT EXISTS sqlock_advisory_names (
  lock_name VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
  name      TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- The sequence, on MariaDB only (by dynamic SQL, so that MySQL 8 parses this file too). A
-- Galera node refuses a cached sequence: NOCACHE there (row-mode fences come from the
-- replicated counter row on Galera, see sqlock_next_fence in sql/mysql/00_functions.sql).
DROP PROCEDURE IF EXISTS sqlock_v2_fence_sequence;
DELIMITER $$
CREATE PROCEDURE sqlock_v2_fence_sequence()
MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  IF @@version LIKE '%MariaDB%' THEN
    SET @sqlock_ddl = CONCAT('CREATE SEQUENCE IF NOT EXISTS sqlock_fence_seq START WITH 1 ',
                             IF(@@global.wsrep_on = 1, 'NOCACHE', 'CACHE 1000'));
    PREPARE sqlock_ddl FROM @sqlock_ddl;
    EXECUTE sqlock_ddl;
    -- SETVAL takes a constant and never moves a sequence backwards.
    SET @sqlock_ddl = CONCAT('DO SETVAL(sqlock_fence_seq, ',
                             (SELECT value + 1000000 FROM sqlock_counters WHERE name = 'fence'), ')');
    PREPARE sqlock_ddl FROM @sqlock_ddl;
    EXECUTE sqlock_ddl;
    DEALLOCATE PREPARE sqlock_ddl;
    SET @sqlock_ddl = NULL;
  END IF;
END$$
DELIMITER ;
CALL sqlock_v2_fence_sequence();
DROP PROCEDURE sqlock_v2_fence_sequence;

INSERT IGNORE INTO sqlock_schema_version (version, description)
VALUES (2, 'advisory holds in memory, fences from a sequence');
