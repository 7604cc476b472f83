-- sqlock schema for MySQL/MariaDB, version 9: the writer marks of many waiting requests that
-- end at once are removed in one statement. Safe to re-run, and to run while holds are live:
-- nothing stored changes.
--
-- A waiting exclusive request marks its name so that new shared holders keep out; when it ends
-- without the lock its mark is removed at once (sqlock_clear_mark). A client that cancels many
-- waits at once (its asynchronous requests stopped together) now sends their marks in batches
-- through sqlock_clear_marks (sql/mysql/acquire_shared.sql) instead of one call each. A client
-- of version 8 and one of version 9 may run side by side.
--
-- Nothing to create here: the routine installed with this version is the change; this row
-- makes clients ask for it.

INSERT IGNORE INTO sqlock_schema_version (version, description)
VALUES (9, 'writer marks cleared in batches');
