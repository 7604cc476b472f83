-- sqlock schema for MySQL/MariaDB, version 3: shared locks and semaphore permits (row modes).
-- Exclusive holds stay one row per name in sqlock_locks, untouched by this migration, so a hold
-- taken before the upgrade stays held; every acquire of a name, of any kind, locks that name's
-- sqlock_locks row (a free row, owner '', when nobody holds it exclusively), which puts the
-- acquires of one name in a line. The holders of shared locks and of semaphore permits are rows
-- of sqlock_holders, one per hold, each with its own owner, lease (server clock) and fence (from
-- the same counter, so an exclusive hold's fence exceeds every earlier hold's). A waiting
-- exclusive request marks its name in sqlock_writer_marks for a few seconds at a time, so that
-- new shared holders queue behind it instead of starving it.
CREATE TABLE IF NOT EXISTS sqlock_holders (
  name_key    VARBINARY(255) NOT NULL,              -- sqlock_key(name)
  owner       VARBINARY(64) NOT NULL,               -- owner token of this hold
  name        TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,  -- verbatim
  kind        VARCHAR(8) CHARACTER SET ascii NOT NULL,  -- shared | permit
  permits     INT UNSIGNED NOT NULL DEFAULT 0,      -- kind permit: the name's permits; else 0
  fence       BIGINT UNSIGNED NOT NULL,             -- fencing token of this hold
  acquired_at DATETIME(6) NOT NULL,                 -- server time, UTC
  expires_at  DATETIME(6) NOT NULL,                 -- server time, UTC
  mode        VARCHAR(16) CHARACTER SET ascii NOT NULL,
  holder      VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  PRIMARY KEY (name_key, owner),
  KEY sqlock_holders_expiry (expires_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- One row per name an exclusive request is waiting for; it ends when that request acquires,
-- when its acquire() call ends, or at expires_at (each busy attempt moves it on).
CREATE TABLE IF NOT EXISTS sqlock_writer_marks (
  name_key   VARBINARY(255) NOT NULL PRIMARY KEY,
  owner      VARBINARY(64) NOT NULL,                -- owner token of the waiting request
  expires_at DATETIME(6) NOT NULL
) ENGINE = InnoDB;

INSERT IGNORE INTO sqlock_schema_version (version, description)
VALUES (3, 'shared locks and semaphore permits');
