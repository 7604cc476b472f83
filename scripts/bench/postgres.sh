#!/usr/bin/env bash
# sqlock bench per mode beside pgbench -M prepared running the same two function calls
# (acquire + release with a fresh owner each time), back to back in one run; then, for
# advisory mode, the raw ceiling: pgbench -M prepared running
#   SELECT pg_try_advisory_lock(k); SELECT pg_advisory_unlock(k);
# beside sqlock advisory and pessimistic (1 thread), the row modes' ceiling: pgbench running a raw
#   INSERT ... ON CONFLICT DO UPDATE ... WHERE expired; DELETE ... WHERE owner = ...
# on a table of its own (sqlock_bench_raw), and the contended handoff (4 threads).
# Usage: scripts/bench/postgres.sh BUILD_DIR [URL]   (URL defaults to SQLOCK_TEST_POSTGRES_URL,
# e.g. from $SQLOCK_RUN_DIR/env.sh after scripts/servers.sh start postgres). Say which server
# settings (fsync, synchronous_commit) the URL has: the script prints them.
# BENCH_SCHEMA (default sqlock): the schema to migrate and use (a server shared with other
# versions of sqlock keeps its own); the URL must then carry no sqlock parameters.
# BENCH_SECONDS (default 10) per run; BENCH_ROUNDS (default 3) rounds of the advisory ceiling
# comparison, interleaved, since a shared machine's load moves both sides.
set -u
build=${1:-build}
sqlock=$build/bin/sqlock
url=${2:-${SQLOCK_TEST_POSTGRES_URL:?start the servers and source env.sh, or pass a URL}}
secs=${BENCH_SECONDS:-10}
rounds=${BENCH_ROUNDS:-3}
schema=${BENCH_SCHEMA:-sqlock}
surl=$url  # the URL sqlock is given
[ "$schema" != sqlock ] && surl="$url?schema=$schema"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$sqlock" migrate --url "$surl" >/dev/null
for mode in pessimistic optimistic advisory; do
  for c in u c; do
    name="'pgbench/u/' || CAST(:client_id AS text)"
    [ $c = c ] && name="'pgbench/c'"
    owner="'owner-' || CAST(:k AS text)"
    if [ $mode = advisory ]; then
      # The library's advisory pair (advisory_lock_key / advisory_unlock_key, schema version 9)
      # with the key the library would compute client-side; pgbench has no SHA-256, so its own
      # hash of the name stands in (the routines take any key).
      cat >"$dir/${mode}_$c.sql" <<SQL
\set k random(1, 1000000000)
\set key hash($( [ $c = c ] && echo 0 || echo ':client_id'))
SELECT coalesce($schema.advisory_lock_key(:key, $name, $owner, 'pgbench'), 0) AS f \\gset
SELECT $schema.advisory_unlock_key(:key, $name, $owner, :f, false);
SQL
    else
      cat >"$dir/${mode}_$c.sql" <<SQL
\set k random(1, 1000000000)
SELECT fence, status FROM $schema.acquire_$mode($name, $owner, 30000, 'pgbench', 0);
SELECT $schema.release_$mode($name, $owner);
SQL
    fi
  done
done
cat >"$dir/raw.sql" <<'SQL'
\set k random(1, 1000000000)
SELECT pg_try_advisory_lock(:k);
SELECT pg_advisory_unlock(:k);
SQL
# The row modes' ceiling: the raw upsert + owner-checked delete pair a user could write instead,
# on a table of the script's own (taken over when expired, as the pessimistic routine does).
psql -X -q "$url" -c "CREATE TABLE IF NOT EXISTS sqlock_bench_raw (name text PRIMARY KEY,
  owner text NOT NULL, expires_at timestamptz NOT NULL)" >/dev/null
cat >"$dir/raw_rows.sql" <<'SQL'
\set k random(1, 1000000000)
INSERT INTO sqlock_bench_raw AS l (name, owner, expires_at)
  VALUES ('raw/' || :client_id, 'o' || :k, clock_timestamp() + interval '30 s')
  ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
  WHERE l.expires_at <= clock_timestamp();
DELETE FROM sqlock_bench_raw WHERE name = 'raw/' || :client_id AND owner = 'o' || :k;
SQL
settings=$(psql -X -At "$url" -c "SELECT string_agg(name || '=' || setting, ' ' ORDER BY name)
  FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'server_version')" 2>/dev/null)
echo "## postgres: $settings; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
for mode in pessimistic optimistic advisory; do
  for threads in 1 4; do
    for c in u c; do
      flag=""
      [ $c = c ] && flag="--contended"
      [ $c = c ] && [ "$threads" = 1 ] && continue
      echo "\$ sqlock bench --url \$URL --mode $mode --threads $threads --duration ${secs}s $flag --json"
      "$sqlock" bench --url "$surl" --mode $mode --threads $threads --duration "${secs}s" $flag --json 2>/dev/null
      echo "\$ pgbench -n -M prepared -c $threads -j $threads -T $secs -f ${mode}_$c.sql \$URL"
      pgbench -n -M prepared -c "$threads" -j "$threads" -T "$secs" -f "$dir/${mode}_$c.sql" "$url" 2>&1 |
        grep -E "^(tps|latency average)"
    done
  done
done
echo "## the modes beside their raw ceilings, $rounds interleaved rounds"
for r in $(seq "$rounds"); do
  echo "\$ pgbench -n -M prepared -T $secs -f raw_rows.sql \$URL   # upsert + delete of a row"
  pgbench -n -M prepared -T "$secs" -f "$dir/raw_rows.sql" "$url" 2>&1 | grep -E "^(tps|latency average)"
  echo "\$ pgbench -n -M prepared -T $secs -f raw.sql \$URL   # pg_try_advisory_lock + pg_advisory_unlock"
  pgbench -n -M prepared -T "$secs" -f "$dir/raw.sql" "$url" 2>&1 | grep -E "^(tps|latency average)"
  for mode in advisory pessimistic; do
    echo "\$ sqlock bench --url \$URL --mode $mode --duration ${secs}s --json"
    "$sqlock" bench --url "$surl" --mode $mode --duration "${secs}s" --json 2>/dev/null
  done
  echo "\$ sqlock bench --url \$URL --mode advisory --threads 4 --contended --duration ${secs}s --json"
  "$sqlock" bench --url "$surl" --mode advisory --threads 4 --contended --duration "${secs}s" --json 2>/dev/null
done
