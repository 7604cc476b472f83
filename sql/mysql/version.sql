-- The installed schema version, readable by an EXECUTE-only user (the library checks it at
-- connect). Installed last, so its presence also says the procedures are in place.
DROP FUNCTION IF EXISTS sqlock_schema_version;
DELIMITER $$
CREATE FUNCTION sqlock_schema_version() RETURNS INT
READS SQL DATA SQL SECURITY DEFINER
RETURN (SELECT COALESCE(MAX(version), 0) FROM sqlock_schema_version)$$
DELIMITER ;
