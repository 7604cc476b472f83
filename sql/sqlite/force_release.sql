-- Administrative release of a name whoever holds it; 1 = a hold was removed.
DELETE FROM sqlock_locks WHERE name = :name AND owner <> '';
SELECT changes();
