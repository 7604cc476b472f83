-- sqlock schema for MySQL/MariaDB, version 5: one name, one lock across modes.
-- Safe to run while holds are live: nothing stored changes.
--
-- Until this version the row modes (rows of sqlock_locks and sqlock_holders) and advisory mode
-- (GET_LOCK on sqlock_lock_name(name)) of one database never saw each other: a name could be
-- held in both at once. From this version they meet on the name's row (sql/mysql/01_holders.sql):
-- a row-mode acquire, holding the name's row locked, answers busy while an advisory-mode session
-- holds the name's GET_LOCK lock; an advisory acquire, once its session holds that lock, looks
-- the name's live rows up with locking reads (which wait for a row-mode acquire in progress)
-- and gives the lock back when a row mode holds the name. The library takes its advisory holds
-- on MariaDB with sqlock_advisory_take(lock_name, name, wait_ms) from this version;
-- sqlock_advisory_lock, which a client of version 4 calls, stays as it was (it does not look).
--
-- sqlock_row_names (MEMORY) lists the names the row modes have taken since the server started,
-- so that an advisory acquire of a name no row mode uses reads no InnoDB table (that read costs
-- MariaDB several times the lock itself): every row-mode acquire adds its name before it looks
-- at the GET_LOCK lock; sqlock_row_names_fill() lists the names of the committed rows, then adds
-- the row X'FF' (no name's key: UTF-8 has no byte 0xFF, a hashed key starts with 0x00), and
-- only while that row is there with all_names = 0 may an advisory acquire skip the InnoDB
-- look-up for a name not listed. A restart empties the table (fill runs again with the epoch
-- raise); a full table sets all_names = 1 (every advisory acquire looks then).

CREATE TABLE IF NOT EXISTS sqlock_row_names (
  name_key  VARBINARY(255) NOT NULL PRIMARY KEY,
  all_names TINYINT NOT NULL DEFAULT 0
) ENGINE = MEMORY;

INSERT IGNORE INTO sqlock_schema_version (version, description)
VALUES (5, 'one name, one lock: the row modes and GET_LOCK mode meet on the name''s row');
