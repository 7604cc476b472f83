-- Removes the writer mark of an exclusive acquire() call that ended without the lock.
DELETE FROM sqlock_writer_marks WHERE name = :name AND owner = :owner;
