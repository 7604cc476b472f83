-- sqlock schema for PostgreSQL, version 15: the writer marks of many waiting requests that end
-- at once are removed in one statement. Safe to re-run, and to run while holds are live:
-- nothing stored changes.
--
-- A waiting exclusive request marks its name so that new shared holders keep out; when it ends
-- without the lock its mark is removed at once (sqlock.clear_mark). A client that cancels many
-- waits at once (its asynchronous requests stopped together) now sends their marks in batches
-- through sqlock.clear_marks (sql/postgresql/acquire_shared.sql) instead of one call each. A
-- client of version 14 and one of version 15 may run side by side.
--
-- Nothing to create here: the routine installed with this version is the change; this row
-- makes clients ask for it.

INSERT INTO sqlock.schema_version (version, description)
VALUES (15, 'writer marks cleared in batches')
ON CONFLICT (version) DO NOTHING;
