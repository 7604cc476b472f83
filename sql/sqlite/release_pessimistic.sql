-- Owner-checked release: deletes only our row; 1 = released, 0 = nothing of ours was there.
DELETE FROM sqlock_locks WHERE name = :name AND owner = :owner;
SELECT changes();
