-- sqlock schema for SQLite, version 1: lock rows, the fencing counter, the schema version.
-- Times are milliseconds of the kernel's boot-time clock (CLOCK_BOOTTIME, shared by every
-- process on the machine and never set back), tagged with the boot id: a row written before a
-- reboot is expired. acquired_at is wall-clock text for people only; expiry never reads it.
CREATE TABLE IF NOT EXISTS sqlock_schema_version (
  version      INTEGER PRIMARY KEY,
  description  TEXT NOT NULL,
  installed_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

CREATE TABLE IF NOT EXISTS sqlock_locks (
  name        TEXT NOT NULL PRIMARY KEY,  -- verbatim, compared byte for byte (BINARY)
  owner       TEXT NOT NULL,              -- '' = free (optimistic rows stay after release)
  fence       INTEGER NOT NULL,           -- fencing token of the hold
  version     INTEGER NOT NULL DEFAULT 0, -- compare-and-set version (optimistic mode)
  boot_id     TEXT NOT NULL,              -- kernel boot id when acquired_ms/expires_ms were set
  acquired_ms INTEGER NOT NULL,
  expires_ms  INTEGER NOT NULL,
  acquired_at TEXT NOT NULL,              -- wall-clock text, display only
  mode        TEXT NOT NULL,
  holder      TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS sqlock_locks_expiry ON sqlock_locks (expires_ms);

-- Persistent counters; 'fence' only ever increases, whatever is released or swept.
CREATE TABLE IF NOT EXISTS sqlock_counters (
  name  TEXT NOT NULL PRIMARY KEY,
  value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT OR IGNORE INTO sqlock_counters (name, value) VALUES ('fence', 0);

INSERT OR IGNORE INTO sqlock_schema_version (version, description) VALUES (1, 'locks');
