-- sqlock schema for PostgreSQL, version 10: one name, one lock across modes.
-- Safe to re-run, and to run while holds are live: their rows, sessions and fences stay.
--
-- Until this version the row modes (rows in sqlock.locks and sqlock.holders) and advisory mode
-- (a session holding pg_advisory_lock(sqlock.lock_key(name))) never saw each other: a name could
-- be held exclusively in both at once. From this version every mode meets on the name's key
-- (sql/postgresql/01_holders.sql): a row-mode acquire takes the key for its own transaction
-- (pg_try_advisory_xact_lock, shared for a shared or permit request) and is busy when an
-- advisory session or a transaction-scoped lock has it; an advisory acquire, once its session
-- has the key, looks up the name's live rows in the same call and gives the key back when a row
-- mode holds the name. A row-mode transaction commits its row before it lets the key go, so
-- neither side can miss the other. Holds taken before this version keep excluding: a live row
-- is seen by the new advisory acquire, a held key refuses the new row-mode acquire.
--
-- Nothing to create here: the routines installed with this version are the change; this row
-- makes clients ask for them.

INSERT INTO sqlock.schema_version (version, description)
VALUES (10, 'one name, one lock: every mode meets on the name''s key')
ON CONFLICT (version) DO NOTHING;
