-- sqlock schema for MySQL 8 / MariaDB 10.4+, version 1: lock rows, advisory-hold rows, the
-- fencing counter, an audit table and the schema version. InnoDB, utf8mb4.
-- Names are stored verbatim in `name` (utf8mb4_bin) and keyed by `name_key` = sqlock_key(name):
-- the name's own bytes when they fit the index (<= 255 bytes, not starting with 0x00), else
-- 0x00 + SHA-256(name). The key is injective (short keys never start with 0x00), so two
-- different names never share a row; comparisons are on bytes (no PAD SPACE, no case folding).
-- Times are the server's clock in UTC (UTC_TIMESTAMP(6), i.e. NOW(6) without the session's
-- time zone), so a client's clock or time_zone setting never moves an expiry.
-- Runs unchanged in the `mysql`/`mariadb` client; `sqlock migrate` applies it statement by statement.
CREATE TABLE IF NOT EXISTS sqlock_schema_version (
  version      INT NOT NULL PRIMARY KEY,
  description  VARCHAR(200) NOT NULL,
  installed_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Lease-based holds (pessimistic and optimistic modes share the table).
CREATE TABLE IF NOT EXISTS sqlock_locks (
  name_key    VARBINARY(255) NOT NULL,              -- sqlock_key(name)
  name        TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,  -- verbatim
  owner       VARBINARY(64) NOT NULL DEFAULT '',    -- '' = free (optimistic rows stay)
  fence       BIGINT UNSIGNED NOT NULL DEFAULT 0,   -- fencing token of the hold
  version     BIGINT UNSIGNED NOT NULL DEFAULT 0,   -- compare-and-set version (optimistic)
  acquired_at DATETIME(6) NOT NULL,                 -- server time, UTC
  expires_at  DATETIME(6) NOT NULL,                 -- server time, UTC
  mode        VARCHAR(16) CHARACTER SET ascii NOT NULL,
  holder      VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  PRIMARY KEY (name_key),
  KEY sqlock_locks_expiry (expires_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Advisory mode: who holds which GET_LOCK lock, for list(), fencing and force_release(). The
-- lock itself is the server's GET_LOCK on `lock_name`; a row whose connection no longer holds
-- that lock (IS_USED_LOCK) is stale and ignored (and removed by the sweep).
CREATE TABLE IF NOT EXISTS sqlock_advisory (
  name_key      VARBINARY(255) NOT NULL,
  name          TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  lock_name     VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  owner         VARBINARY(64) NOT NULL,
  fence         BIGINT UNSIGNED NOT NULL,
  connection_id BIGINT UNSIGNED NOT NULL,
  acquired_at   DATETIME(6) NOT NULL,
  holder        VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  PRIMARY KEY (name_key)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Persistent counters; 'fence' only ever increases, whatever is released or swept.
CREATE TABLE IF NOT EXISTS sqlock_counters (
  name  VARCHAR(32) CHARACTER SET ascii NOT NULL PRIMARY KEY,
  value BIGINT UNSIGNED NOT NULL
) ENGINE = InnoDB;
INSERT IGNORE INTO sqlock_counters (name, value) VALUES ('fence', 0);

-- Administrative releases (force_release), for the DBA.
CREATE TABLE IF NOT EXISTS sqlock_audit (
  id        BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  at        DATETIME(6) NOT NULL,
  action    VARCHAR(32) CHARACTER SET ascii NOT NULL,
  name      TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  owner     VARBINARY(64) NOT NULL DEFAULT '',
  fence     BIGINT UNSIGNED NOT NULL DEFAULT 0,
  by_user   VARCHAR(300) NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

INSERT IGNORE INTO sqlock_schema_version (version, description) VALUES (1, 'locks');
