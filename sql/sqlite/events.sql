-- The newest events of sqlock_events (forced releases), newest first, of names starting with
-- :prefix (compared byte for byte, never a pattern), at most :limit (1..10000) rows.
SELECT at, event, name, owner, fence, mode, holder, actor, detail
  FROM sqlock_events
 WHERE substr(name, 1, length(:prefix)) = :prefix
 ORDER BY id DESC
 LIMIT max(min(:limit, 10000), 1);
