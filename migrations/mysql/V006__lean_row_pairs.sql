-- sqlock schema for MySQL/MariaDB, version 6: the row modes' lock + unlock pairs with fewer
-- routine calls. Safe to re-run, and to run while holds are live: nothing stored changes.
--
-- sqlock_acquire_exclusive_pessimistic() and _optimistic() (sql/mysql/) compute the name's row
-- key, the server's clock and the GET_LOCK name as inline expressions instead of stored
-- function calls, test for a live fence epoch and a listed row name in one statement (calling
-- sqlock_fence_epoch_ready / sqlock_row_name_seen only when there is work), draw a MariaDB fence
-- inline (sqlock_next_fence only on MySQL, a Galera node or without an epoch), and touch writer
-- marks only for a waiting request (p_mark_ms > 0); the pessimistic acquire checks live shared
-- holds inside its INSERT of a name's first row. The releases compute the key inline. The same
-- checks in the same order, under the same row lock; the same signatures, so clients of every
-- version keep calling them.
--
-- Nothing to create here: the routines installed with this version are the change; this row
-- makes clients ask for them.

INSERT IGNORE INTO sqlock_schema_version (version, description)
VALUES (6, 'row-mode pairs with fewer routine calls');
