-- sqlock schema for PostgreSQL, version 10: one name, one lock across modes, with one fence
-- counter. Safe to re-run, and to run while holds are live: their rows, sessions and fences stay.
--
-- Until this version the row modes (rows in sqlock.locks and sqlock.holders) and advisory mode
-- (a session holding pg_advisory_lock(sqlock.lock_key(name))) never saw each other: a name could
-- be held exclusively in both at once. From this version every mode meets on the name's key
-- (sql/postgresql/01_holders.sql): a row-mode acquire takes the key for its own transaction
-- (pg_try_advisory_xact_lock, shared for a shared or permit request) and is busy when an
-- advisory session or a transaction-scoped lock has it; an advisory acquire, once its session
-- has the key, looks up the name's live rows in the same call and gives the key back when a row
-- mode holds the name. A row-mode transaction commits its row before it lets the key go, so
-- neither side can miss the other. Holds taken before this version keep excluding: a live row
-- is seen by the new advisory acquire, a held key refuses the new row-mode acquire.
--
-- The fences of the two sides came from two counters (row modes: the logged sequence
-- sqlock.fence_seq; advisory mode: the UNLOGGED sqlock.advisory_fence_seq; both under the same
-- epoch, V004 and V007), so a later hold of a name in one mode could get a lower fence than an
-- earlier one in the other. From this version every mode draws from sqlock.advisory_fence_seq
-- (sqlock.row_fence() in sql/postgresql/fence_epoch.sql, replaced here too so that the switch
-- and the move below are one step). The counter is first moved above every value either
-- sequence gave, with the epoch's live row locked: acquires of every mode read it for their
-- fence, so none completes a fence while the counters move. A few draw their counter value
-- before they read the epoch (and wait here); the margin of 1,000,000 (of 2^44 per epoch) puts
-- the counter above those too.

LOCK TABLE sqlock.fence_epoch_live IN ACCESS EXCLUSIVE MODE;

SELECT pg_catalog.setval('sqlock.advisory_fence_seq',
                         greatest((SELECT s.last_value FROM sqlock.advisory_fence_seq s),
                                  (SELECT s.last_value FROM sqlock.fence_seq s)) + 1000000,
                         true);

-- (plpgsql, whose body is not checked here: on a fresh schema next_fence() comes with the
-- routines, after the migrations; sql/postgresql/fence_epoch.sql then installs its own form.)
CREATE OR REPLACE FUNCTION sqlock.row_fence() RETURNS bigint
  LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
  RETURN sqlock.next_fence('sqlock.advisory_fence_seq');
END
$$;
REVOKE ALL ON FUNCTION sqlock.row_fence() FROM PUBLIC;

INSERT INTO sqlock.schema_version (version, description)
VALUES (10, 'one name, one lock: every mode meets on the name''s key and draws one fence counter')
ON CONFLICT (version) DO NOTHING;
