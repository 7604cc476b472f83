-- sqlock schema for SQLite, version 3: an audit trail of forced releases, naming who forced
-- each (the actor the client passes; SQLite has no database user to add). Safe to run while
-- holds are live: it only adds a table. A process still running the version-2 library keeps
-- working; its forced releases write no event.
CREATE TABLE IF NOT EXISTS sqlock_events (
  id     INTEGER PRIMARY KEY,
  at     TEXT NOT NULL,                   -- wall-clock ISO-8601 UTC, display only
  event  TEXT NOT NULL,                   -- force_release
  name   TEXT NOT NULL,
  owner  TEXT,
  fence  INTEGER,
  mode   TEXT,
  holder TEXT,
  actor  TEXT NOT NULL DEFAULT '',        -- who forced it ('' when the client named no one)
  detail TEXT
);

INSERT OR IGNORE INTO sqlock_schema_version (version, description)
VALUES (3, 'an audit trail of forced releases');
