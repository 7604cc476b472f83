# Many instances migrating one fresh store at once: five `sqlock migrate` started together, and
# five processes connecting with the URL flag migrate=auto (`sqlock run`; SQLite: any open)
# together, each on a
# store of its own (a fresh SQLite file; a fresh PostgreSQL schema; a fresh MariaDB database,
# made by the sqlock_dba user). All succeed, and the schema ends at the newest version with each
# version recorded once. PostgreSQL and MariaDB run when built (SQLOCK_CLI_BACKENDS) and their
# URL variables are set.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
src=$(cd "$here/../.." && pwd)
n=5

# newest DB: the highest V<n> among migrations/DB/.
newest() {
  ls "$src/migrations/$1" | sed -n 's/^V0*\([0-9][0-9]*\)__.*\.sql$/\1/p' | sort -n | tail -1
}

# together LOG COMMAND...: N copies of COMMAND started at the same moment; prints how many
# exited 0. Their output goes to LOG.N.
together() {
  local log=$1 go="$dir/go.$RANDOM" pids=() ok=0 i
  shift
  for i in $(seq $n); do
    (while [ ! -e "$go" ]; do sleep 0.01; done; exec "$@") >"$log.$i" 2>&1 &
    pids+=($!)
  done
  sleep 0.3  # every copy is waiting for the start
  touch "$go"
  for i in "${!pids[@]}"; do wait "${pids[$i]}" && ok=$((ok + 1)); done
  echo $ok
}

# run_case LABEL DB URL_FORMAT MAKE VERSIONS: both ways, each on a fresh store (MAKE prints its
# name, which replaces the %s of URL_FORMAT; $auto is what the URL needs to migrate at connect),
# then VERSIONS STORE prints "count distinct newest" of the recorded versions.
run_case() {
  local label=$1 db=$2 url_fmt=$3 make=$4 versions=$5 want store out
  want=$(newest "$db")
  for how in migrate auto; do
    store=$("$make")
    local url
    # shellcheck disable=SC2059
    url=$(printf "$url_fmt" "$store")
    if [ $how = migrate ]; then
      out=$(together "$dir/$label.$how" "$sqlock" migrate --url "$url")
    else
      out=$(together "$dir/$label.$how" "$sqlock" run --url "$url$auto" \
        -w 60s "cm-$$" -- true)
    fi
    check "$label: $n concurrent ${how/auto/connects with migrate=auto} succeed" $n "$out"
    [ "$out" = $n ] || cat "$dir/$label.$how".* | sort | uniq -c | head -5
    check "$label ($how): versions 1..$want recorded once each" "$want $want $want" \
      "$("$versions" "$store")"
  done
}

# ---- SQLite: a fresh file each time ----
sqlite_make() { echo "$dir/fresh-$RANDOM-$RANDOM.db"; }
sqlite_versions() {
  python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print(*c.execute("select count(*), count(distinct version), max(version) from sqlock_schema_version").fetchone())' "$1"
}
auto=  # SQLite creates its schema at every open
run_case sqlite sqlite "sqlite:%s" sqlite_make sqlite_versions

built() { case ",${SQLOCK_CLI_BACKENDS:-$1}," in *",$1,"*) return 0 ;; esac; return 1; }
wanted() {  # wanted BACKEND VARIABLE: built and its URL set (else skip, or fail under REQUIRE_ALL)
  built "$1" || { echo "skip: $1 (not built)"; return 1; }
  [ -n "${!2:-}" ] && return 0
  if [ "${SQLOCK_TEST_REQUIRE_ALL:-0}" = 1 ]; then check "$2 is set" set unset; else echo "skip: $1 ($2 unset)"; fi
  return 1
}

# ---- PostgreSQL: a fresh schema each time, dropped at the end ----
pg_make() {
  local s="sqlock_t_cm_$$_$RANDOM"
  echo "$s"
}
pg_versions() {
  psql "$SQLOCK_TEST_POSTGRES_URL" -Atc \
    "select count(*), count(distinct version), max(version) from $1.schema_version" | tr '|' ' '
}
if wanted postgres SQLOCK_TEST_POSTGRES_URL; then
  cleanup_pg() {
    for s in $(psql "$SQLOCK_TEST_POSTGRES_URL" -Atc \
      "select nspname from pg_namespace where nspname like 'sqlock_t_cm_$$_%'"); do
      psql "$SQLOCK_TEST_POSTGRES_URL" -qc "DROP SCHEMA IF EXISTS $s CASCADE; DROP ROLE IF EXISTS ${s}_execute" >/dev/null 2>&1
    done
  }
  trap 'kill $(jobs -p) 2>/dev/null; cleanup_pg; rm -rf "$dir"' EXIT
  auto='&migrate=auto'
  run_case postgresql postgresql "$SQLOCK_TEST_POSTGRES_URL?schema=%s" pg_make pg_versions
fi

# ---- MariaDB: a fresh database each time (sqlock_dba may create sqlock_t_*), dropped ----
if wanted mysql SQLOCK_TEST_MYSQL_DBA_URL; then
  # mysql://user:password@host:port/db
  my_re='^mysql://([^:]+):([^@]+)@([^:/]+):([0-9]+)/'
  [[ $SQLOCK_TEST_MYSQL_DBA_URL =~ $my_re ]] || check "SQLOCK_TEST_MYSQL_DBA_URL parses" yes no
  my_user=${BASH_REMATCH[1]} my_pw=${BASH_REMATCH[2]} my_host=${BASH_REMATCH[3]} my_port=${BASH_REMATCH[4]}
  my() { mariadb --no-defaults -h "$my_host" -P "$my_port" -u "$my_user" -p"$my_pw" -N -B "$@"; }
  my_make() {
    local d="sqlock_t_cm$$x$RANDOM"
    my -e "CREATE DATABASE $d CHARACTER SET utf8mb4 COLLATE utf8mb4_bin" sqlock_empty
    echo "$d"
  }
  my_versions() {
    my -e "select count(*), count(distinct version), max(version) from sqlock_schema_version" "$1" | tr '\t' ' '
  }
  cleanup_my() {
    for d in $(my -e "show databases like 'sqlock\\_t\\_cm$$%'" sqlock_empty); do
      my -e "DROP DATABASE IF EXISTS $d" sqlock_empty
    done
  }
  trap 'kill $(jobs -p) 2>/dev/null; [ -n "${SQLOCK_TEST_POSTGRES_URL:-}" ] && built postgres && cleanup_pg; cleanup_my; rm -rf "$dir"' EXIT
  auto='?migrate=auto'
  run_case mariadb mysql "mysql://$my_user:$my_pw@$my_host:$my_port/%s" my_make my_versions
fi

finish concurrent_migrate
