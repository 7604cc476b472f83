-- sqlock schema for PostgreSQL, version 8: the lean advisory pair.
-- Safe to re-run, and to run while holds are live: nothing stored changes.
--
-- Until this version the library took an advisory hold with acquire_advisory(), which also
-- wrote the hold's row in sqlock.advisory_holds. That write takes a transaction id, so its
-- commit writes WAL and wakes the WAL writer even on an UNLOGGED table: it cost the server more
-- than the lock (docs/backends/postgres.md). From this version the library calls
-- advisory_lock() / advisory_unlock() (sql/postgresql/advisory_session.sql), which write
-- nothing, and records the holds that last ~10 ms or more with advisory_record(), in the
-- background. acquire_advisory() and release_advisory() stay for callers without a record of
-- their own; holds of either kind exclude each other (the same key). A client of version 7
-- and one of version 8 may run side by side: list() shows the older client's holds at once
-- and the newer one's from their record.
--
-- Nothing to create here: the routines installed with this version are the change; this row
-- makes clients ask for them.

INSERT INTO sqlock.schema_version (version, description)
VALUES (8, 'advisory holds taken by the lean pair, recorded once they last')
ON CONFLICT (version) DO NOTHING;
