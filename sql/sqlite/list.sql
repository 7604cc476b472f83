-- Held (unexpired) locks whose name starts with :prefix.
SELECT name, owner, fence, acquired_at,
       strftime('%Y-%m-%dT%H:%M:%fZ', 'now',
                printf('%+.3f seconds', (expires_ms - sqlock_now_ms()) / 1000.0)),
       mode, holder
  FROM sqlock_locks
 WHERE owner <> '' AND boot_id = sqlock_boot_id() AND expires_ms > sqlock_now_ms()
   AND substr(name, 1, length(:prefix)) = :prefix
 ORDER BY name;
