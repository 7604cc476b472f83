-- Owner-checked release of a shared or permit hold: deletes only our row; 1 = released.
DELETE FROM sqlock_holders WHERE name = :name AND owner = :owner;
SELECT changes();
