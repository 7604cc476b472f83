-- Deletes expired writer marks and up to :limit expired shared or permit holds; returns how
-- many holds. (sweep.sql deletes expired exclusive rows.)
DELETE FROM sqlock_writer_marks
 WHERE boot_id <> sqlock_boot_id() OR expires_ms <= sqlock_now_ms();
DELETE FROM sqlock_holders
 WHERE (name, owner) IN (SELECT name, owner FROM sqlock_holders
                          WHERE boot_id <> sqlock_boot_id() OR expires_ms <= sqlock_now_ms()
                          LIMIT :limit);
SELECT changes();
