-- sqlock schema for SQLite, version 2: shared locks and semaphore permits.
-- Exclusive holds stay one row per name in sqlock_locks, untouched by this migration: a hold
-- taken before the upgrade stays held, and a process still running the version-1 library keeps
-- excluding the new one on exclusive locks. The holders of shared locks and of semaphore
-- permits are rows of sqlock_holders, one per hold, each with its own owner, lease and fence
-- (from the same 'fence' counter, so an exclusive hold's fence exceeds every earlier hold's).
-- A waiting exclusive request marks its name in sqlock_writer_marks for a few seconds at a
-- time, so that new shared holders queue behind it instead of starving it.
-- Times are sqlock_now_ms() milliseconds tagged with sqlock_boot_id(), as in version 1.
CREATE TABLE IF NOT EXISTS sqlock_holders (
  name        TEXT NOT NULL,                -- verbatim, compared byte for byte (BINARY)
  owner       TEXT NOT NULL,                -- owner token of this hold
  kind        TEXT NOT NULL CHECK (kind IN ('shared', 'permit')),
  permits     INTEGER NOT NULL DEFAULT 0,   -- kind permit: the name's number of permits; else 0
  fence       INTEGER NOT NULL,             -- fencing token of this hold
  boot_id     TEXT NOT NULL,                -- kernel boot id when the times were set
  acquired_ms INTEGER NOT NULL,
  expires_ms  INTEGER NOT NULL,
  acquired_at TEXT NOT NULL,                -- wall-clock text, display only
  mode        TEXT NOT NULL,
  holder      TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (name, owner)
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS sqlock_holders_expiry ON sqlock_holders (expires_ms);

-- One row per name an exclusive request is waiting for; it ends when that request acquires,
-- when its acquire() call ends, or at expires_ms (each busy attempt of the request moves it on).
CREATE TABLE IF NOT EXISTS sqlock_writer_marks (
  name       TEXT NOT NULL PRIMARY KEY,
  owner      TEXT NOT NULL,                 -- owner token of the waiting exclusive request
  boot_id    TEXT NOT NULL,
  expires_ms INTEGER NOT NULL
) WITHOUT ROWID;

INSERT OR IGNORE INTO sqlock_schema_version (version, description)
VALUES (2, 'shared locks and semaphore permits');
