-- sqlock schema for PostgreSQL, version 13: a forced release names who forced it. Safe to
-- re-run, and to run while holds are live: nothing stored changes.
--
-- sqlock.force_release(name, actor) takes the person or tool that forces the release as a
-- bound parameter and writes "ACTOR (role ROLE)" as the actor of its sqlock.events rows (the
-- role alone before: every admin looked the same). sqlock.force_release(name), which a client of
-- version 12 or older calls, stays and releases the same way, its events naming the role alone.
--
-- Nothing to create here: the routines installed with this version are the change; this row
-- makes clients ask for them.

INSERT INTO sqlock.schema_version (version, description)
VALUES (13, 'a forced release names who forced it')
ON CONFLICT (version) DO NOTHING;
