-- sqlock schema for PostgreSQL, version 7: fences of the row modes carry the fence epoch.
-- Safe to re-run, and to run while holds are live: their rows and fences do not change.
--
-- Pessimistic, optimistic, shared and permit holds took their fencing token straight from the
-- logged sequence sqlock.fence_seq. It rises on one server and across its crashes, but a standby
-- promoted before it received the newest values hands them out again (measured in
-- docs/reliability.md, "PostgreSQL failover": 190 repeated fences after an asynchronous standby
-- 2 s behind was promoted). From this version the row-mode acquires take
-- sqlock.row_fence() (sql/postgresql/fence_epoch.sql): (epoch << 44) | nextval(fence_seq), with
-- the epoch advisory holds already use (V004), raised by the first acquire on a promoted standby
-- or after a crash. Every token given before this version is a bare sequence value below 2^44,
-- so below every token given after it: fences keep rising across the upgrade.
--
-- Nothing to create here: the routines installed with this version (fence_epoch.sql and the
-- acquire functions) are the change; this row makes clients ask for them.

INSERT INTO sqlock.schema_version (version, description)
VALUES (7, 'row-mode fences carry the fence epoch')
ON CONFLICT (version) DO NOTHING;
