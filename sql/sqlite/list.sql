-- Held (unexpired) locks whose name starts with :prefix: the exclusive holds, then each holder
-- of a shared lock or semaphore (one row per hold, with its kind and the name's permits).
SELECT name, owner, fence, acquired_at,
       strftime('%Y-%m-%dT%H:%M:%fZ', 'now',
                printf('%+.3f seconds', (expires_ms - sqlock_now_ms()) / 1000.0)) AS expires_at,
       mode, holder, 'exclusive' AS kind, 0 AS permits
  FROM sqlock_locks
 WHERE owner <> '' AND boot_id = sqlock_boot_id() AND expires_ms > sqlock_now_ms()
   AND substr(name, 1, length(:prefix)) = :prefix
UNION ALL
SELECT name, owner, fence, acquired_at,
       strftime('%Y-%m-%dT%H:%M:%fZ', 'now',
                printf('%+.3f seconds', (expires_ms - sqlock_now_ms()) / 1000.0)),
       mode, holder, kind, permits
  FROM sqlock_holders
 WHERE boot_id = sqlock_boot_id() AND expires_ms > sqlock_now_ms()
   AND substr(name, 1, length(:prefix)) = :prefix
 ORDER BY name, fence;
