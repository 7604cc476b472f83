-- sqlock schema for MySQL/MariaDB, version 7: an advisory-mode wait locks no table while it
-- waits. Safe to run while holds are live: nothing stored changes.
--
-- Until version 6 the library waited inside sqlock_advisory_take (a GET_LOCK wait within the
-- function's statement). A statement keeps every table it reads locked until it ends, and
-- sqlock_row_names is a MEMORY table (table locks): each row-mode acquire of a name new since
-- the server started waited for the longest advisory wait in progress, on any name. From this
-- version the library waits in a plain GET_LOCK statement and then calls
-- sqlock_advisory_claim(lock_name, name), which looks up the row modes' holds and makes the
-- fence. sqlock_advisory_take stays for clients of version 6 or older.
--
-- Nothing to create here: the routines installed with this version are the change; this row
-- makes clients ask for them.

INSERT IGNORE INTO sqlock_schema_version (version, description)
VALUES (7, 'advisory waits hold no table lock: a plain GET_LOCK, then sqlock_advisory_claim');
