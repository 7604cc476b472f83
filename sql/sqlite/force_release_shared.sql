-- Administrative release of every shared or permit hold of a name, and of a writer's mark;
-- 1 = a hold was removed. (force_release.sql removes the exclusive hold.)
DELETE FROM sqlock_writer_marks WHERE name = :name;
DELETE FROM sqlock_holders WHERE name = :name;
SELECT changes() > 0;
