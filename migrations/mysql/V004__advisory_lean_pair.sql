-- sqlock schema for MySQL/MariaDB, version 4: the lean advisory pair (MariaDB).
-- Safe to run while holds are live: the one table change adds a column to the MEMORY table of
-- records, whose existing rows get fenced = 0 and keep their meaning.
--
-- Until this version the library took an advisory hold with CALL sqlock_advisory_acquire, which
-- also wrote the hold's record. A CALL and that record cost the server about a third of the
-- raw GET_LOCK + RELEASE_LOCK pair (docs/backends/mysql.md has the figures). From this version
-- the library takes a hold on MariaDB with `SELECT sqlock_advisory_lock(name, wait_ms)`
-- (sql/mysql/advisory_session.sql), which writes nothing, and records the holds that last
-- ~10 ms or more with CALL sqlock_advisory_record, in the background. The fence of such a hold
-- is itself held as a GET_LOCK lock, 'sqlock!<fence>', by the session holding the name, so
-- the server knows it at once (fence_check) without a record.
--   fenced  1 = the record's hold also holds 'sqlock!<fence>', and the record counts only while
--           it does: a record left behind by a plain release is then ignored even when the
--           same session takes the name again before its new record is written. 0 = a record
--           of the routines of versions 2 and 3 (no fence lock): it counts while its session
--           holds the name, as before.
-- MySQL 8 has no sequences: there the library keeps calling sqlock_advisory_acquire.
-- (MySQL 8 has no ADD COLUMN IF NOT EXISTS: the column is looked up first.)
DROP PROCEDURE IF EXISTS sqlock_v4_fenced_column;
DELIMITER $$
CREATE PROCEDURE sqlock_v4_fenced_column()
MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  IF NOT EXISTS (SELECT 1 FROM information_schema.columns
                  WHERE table_schema = DATABASE() AND table_name = 'sqlock_advisory_holds'
                    AND column_name = 'fenced') THEN
    ALTER TABLE sqlock_advisory_holds ADD COLUMN fenced TINYINT NOT NULL DEFAULT 0;
  END IF;
END$$
DELIMITER ;
CALL sqlock_v4_fenced_column();
DROP PROCEDURE sqlock_v4_fenced_column;

-- Fences of advisory holds on MariaDB (both the lean pair and sqlock_advisory_acquire) from
-- this version on: (epoch << 40) + NEXTVAL(sqlock_fence_seq).
--   sqlock_counters 'fence_epoch'  the epoch, durable (InnoDB), raised by one in a committed
--                                  transaction by sqlock_fence_epoch_raise() after every start of
--                                  the server.
--   sqlock_fence_epoch_live        (MEMORY) the epoch in force since this start: empty after a
--                                  restart, so the first acquisition finds none and the epoch is
--                                  raised before any fence is handed out.
-- Why: the sequence's cache refills are written to the redo log outside any committed
-- transaction, and a server killed before the log is written loses them — measured: after a
-- kill -9 the sequence went back from 1,107,186 to 1,105,001 (a long chaos run, `restart`
-- fault), so fences repeated. Within an epoch the sequence only rises (it goes back only
-- through a restart, which starts a new epoch); every epoch's fences exceed the one before
-- (the sequence stays below 2^40), and every earlier fence (below 2^40).
CREATE TABLE IF NOT EXISTS sqlock_fence_epoch_live (
  id    TINYINT UNSIGNED NOT NULL PRIMARY KEY,  -- always 1: one row
  epoch BIGINT UNSIGNED NOT NULL
) ENGINE = MEMORY;
INSERT IGNORE INTO sqlock_counters (name, value) VALUES ('fence_epoch', 0);
-- The sequence stays below 2^40 (a trillion holds): NEXTVAL fails beyond, and the acquire with it.
DROP PROCEDURE IF EXISTS sqlock_v4_sequence_bound;
DELIMITER $$
CREATE PROCEDURE sqlock_v4_sequence_bound()
MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  IF @@version LIKE '%MariaDB%' THEN
    -- NOCACHE on a Galera node, which refuses a cached sequence (V002).
    SET @sqlock_ddl = CONCAT('ALTER SEQUENCE sqlock_fence_seq MAXVALUE 1099511627775',
                             IF(@@global.wsrep_on = 1, ' NOCACHE', ''));
    PREPARE sqlock_ddl FROM @sqlock_ddl;
    EXECUTE sqlock_ddl;
    DEALLOCATE PREPARE sqlock_ddl;
    SET @sqlock_ddl = NULL;
  END IF;
END$$
DELIMITER ;
CALL sqlock_v4_sequence_bound();
DROP PROCEDURE sqlock_v4_sequence_bound;

INSERT IGNORE INTO sqlock_schema_version (version, description)
VALUES (4, 'advisory holds taken by the lean pair, recorded once they last');
