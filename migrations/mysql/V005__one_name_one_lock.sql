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
-- Nothing to create here: the routines installed with this version are the change; this row
-- makes clients ask for them.

INSERT IGNORE INTO sqlock_schema_version (version, description)
VALUES (5, 'one name, one lock: the row modes and GET_LOCK mode meet on the name''s row');
