-- sqlock schema for PostgreSQL, version 9: the advisory pair takes the name's key from the caller.
-- Safe to re-run, and to run while holds are live: nothing stored changes.
--
-- advisory_lock_key() and advisory_unlock_key() (sql/postgresql/advisory_session.sql) are the
-- version-8 pair with the key sqlock.lock_key(name) computed by the caller: in SQL that SHA-256
-- was a measurable part of the pair's time. advisory_lock() and advisory_unlock() stay, and
-- compute the key as before; both forms take the same key, so a client of version 8 and one of
-- version 9 exclude each other on every name.
--
-- Nothing to create here: the routines installed with this version are the change; this row
-- makes clients ask for them.

INSERT INTO sqlock.schema_version (version, description)
VALUES (9, 'the advisory pair takes the name''s key computed by the caller')
ON CONFLICT (version) DO NOTHING;
