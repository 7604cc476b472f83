-- sqlock schema for MySQL/MariaDB, version 8: the requests waiting for a lock are listed
-- (`sqlock list --waiting`, the admin page, client::waiting()). Safe to re-run, and to run while
-- holds are live: nothing stored changes.
--
-- A waiting request leaves no trace of its own in the server (row modes try again after a
-- pause; an advisory wait inside GET_LOCK shows only a session and a hashed lock name). From
-- this version a client writes each of its requests that keeps waiting into sqlock_waiting, in
-- batches from one background thread (sqlock_record_waits, sql/mysql/waiting.sql): a request
-- that waits less than about 10 ms is never written, a longer one costs one row write when it
-- starts and one delete when it ends, off its lock path. A row lives until `until` unless its
-- client writes it again: a client that dies while waiting leaves it for at most that long (the
-- sweep deletes it; sqlock_list_waiting skips it).

CREATE TABLE IF NOT EXISTS sqlock_waiting (
  name_key VARBINARY(255) NOT NULL,                 -- sqlock_key(name)
  owner    VARBINARY(64) NOT NULL,                  -- the waiting request's owner token
  name     TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,  -- verbatim
  holder   VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  kind     VARCHAR(16) CHARACTER SET ascii NOT NULL DEFAULT 'exclusive',  -- or shared, permit
  permits  INT UNSIGNED NOT NULL DEFAULT 0,         -- kind permit: the name's number of permits
  since    DATETIME(6) NOT NULL,                    -- server time (UTC) it began waiting
  until    DATETIME(6) NOT NULL,                    -- the row is stale after this
  PRIMARY KEY (name_key, owner),
  KEY sqlock_waiting_until (until)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

INSERT IGNORE INTO sqlock_schema_version (version, description)
VALUES (8, 'waiting requests are listed');
