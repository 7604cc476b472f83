-- Runs last at every `sqlock migrate` (files run in name order): lists the names the row modes
-- hold in sqlock_row_names once the acquire procedures that add their own names are installed
-- (01_holders.sql, sqlock_row_names_fill).
CALL sqlock_row_names_fill();
