-- sqlock schema for PostgreSQL, version 11: a release in the row modes notifies only the names
-- somebody waits for. Safe to re-run, and to run while holds are live: nothing stored changes.
--
-- sqlock.after_release() (sql/postgresql/00_common.sql), which every row-mode release calls,
-- sends NOTIFY only while a waiter of the name is registered in sqlock.advisory_waits, as
-- advisory mode's releases have since version 4; waiting clients of this version register with
-- advisory_wait_notify() before their second attempt. An uncontended lock+unlock pair then sends
-- no notification, which woke every listening session for one transaction each.
-- A waiting client of an earlier version does not register: it is woken by its periodic
-- re-check (once a second) instead of the release's notification. Upgrade the clients that wait
-- on row-mode locks with the schema.
--
-- Nothing to create here: the routines installed with this version are the change; this row
-- makes clients ask for them.

INSERT INTO sqlock.schema_version (version, description)
VALUES (11, 'row-mode releases notify only registered waiters')
ON CONFLICT (version) DO NOTHING;
