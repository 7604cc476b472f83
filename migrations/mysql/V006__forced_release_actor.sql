-- sqlock schema for MySQL/MariaDB, version 6: a forced release names who forced it, and the
-- audit trail is readable through the library (`client::events()`, the admin page). Safe to run
-- while holds are live: nothing stored changes.
--
-- sqlock_force_release_by(name, actor) and sqlock_advisory_force_release_by(name, actor) take
-- the person or tool that forces the release as a bound parameter and write "ACTOR (user USER)"
-- to sqlock_audit.by_user (USER() alone before: every admin looked the same).
-- sqlock_force_release(name) and sqlock_advisory_force_release(name), which a client of version
-- 5 or older calls, stay and release the same way, their audit rows naming USER() alone.
-- sqlock_recent_events(prefix, limit) reads the newest audit rows for an EXECUTE-only user.
--
-- Nothing to create here: the routines installed with this version are the change; this row
-- makes clients ask for them.

INSERT IGNORE INTO sqlock_schema_version (version, description)
VALUES (6, 'a forced release names who forced it; the audit trail readable by the library');
