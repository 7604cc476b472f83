#!/usr/bin/env bash
# `sqlock serve` from outside: --listen checks, the token, Host and Origin checks, --private,
# /healthz, /metrics parsed by Prometheus's own text parser (python3-prometheus-client),
# "expiring soon" by each hold's own lease, paging and numeric sorting at 10,000 locks, and
# (SQLOCK_CLI_POSTGRES=1) serve started while its store is down: /healthz 503 until it answers.
set -uo pipefail
sqlock=$1
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$dir"' EXIT
export SQLOCK_URL="sqlite:$dir/locks.db"
unset SQLOCK_ADMIN_TOKEN
py=/usr/bin/python3  # Debian's python, where python3-prometheus-client lives
fails=0
check() {  # check DESCRIPTION EXPECTED ACTUAL
  if [ "$2" == "$3" ]; then echo "ok: $1"; else echo "FAIL: $1: expected '$2', got '$3'"; fails=$((fails + 1)); fi
}
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }

for bad in 127.0.0.1:99999 127.0.0.1:-1 127.0.0.1:80x 127.0.0.1 :x; do
  "$sqlock" serve --listen "$bad" 2>/dev/null
  check "--listen $bad exits 64" 64 $?
done
"$sqlock" serve --listen 127.0.0.1:0 --token-file "$dir/missing" 2>/dev/null
check "a missing --token-file exits 64" 64 $?
printf 'alice:first-secret\nalice:second-secret\n' >"$dir/twice"
err=$("$sqlock" serve --listen 127.0.0.1:0 --token-file "$dir/twice" 2>&1 >/dev/null)
check "a token file naming alice twice exits 64" 64 $?
case "$err" in *"line 2 repeats the name"*) r=named ;; *) r="$err" ;; esac
check "the error names the line" named "$r"
case "$err" in *first-secret* | *second-secret*) r=leaked ;; *) r=absent ;; esac
check "the error shows no secret" absent "$r"

# start_server NAME ARGS...: starts sqlock serve on a free port; sets $base.
start_server() {
  local name=$1
  shift
  "$sqlock" serve --listen 127.0.0.1:0 "$@" >"$dir/$name.out" 2>"$dir/$name.log" &
  for _ in $(seq 400); do [ -s "$dir/$name.out" ] && break; sleep 0.05; done
  base=$(head -1 "$dir/$name.out")
  base=${base%/}
}

# Two named tokens (and a comment): `token` is admin's, `bob_token` ops-bob's.
token=tok-$RANDOM$RANDOM$RANDOM
bob_token=bob-$RANDOM$RANDOM$RANDOM
printf '# admins\nadmin:%s\nops-bob:%s\n' "$token" "$bob_token" >"$dir/token"
start_server main --token-file "$dir/token" --allow-host locks.example
case "$base" in http://127.0.0.1:[1-9]*) r=yes ;; *) r=no ;; esac
check "--listen 127.0.0.1:0 prints the bound port ($base)" yes "$r"
port=${base##*:}

# ":0" is loopback on any free port, and the port printed is the one listened on.
"$sqlock" serve --listen :0 >"$dir/short.out" 2>/dev/null &
short=$!
for _ in $(seq 400); do [ -s "$dir/short.out" ] && break; sleep 0.05; done
short_base=$(head -1 "$dir/short.out")
short_base=${short_base%/}
case "$short_base" in http://127.0.0.1:[1-9]*) r=yes ;; *) r=no ;; esac
check "--listen :0 prints a loopback address and the bound port ($short_base)" yes "$r"
check "the printed port answers" 200 "$(code "$short_base/healthz")"
kill $short

"$sqlock" run served -- sleep 60 &
held=$!
for _ in $(seq 400); do curl -fs "$base/api/locks" | grep -q served && break; sleep 0.05; done

check "page" 200 "$(code "$base/")"
curl -s -D - -o /dev/null "$base/" | grep -qi "^content-security-policy: default-src 'none'"
check "page has a Content-Security-Policy" 0 $?
check "/healthz while the store answers" 200 "$(code "$base/healthz")"
check "/api/locks is readable without the token" 200 "$(code "$base/api/locks")"
check "/api/events: SQLite keeps an audit trail" 200 "$(code "$base/api/events")"
check "release without the token" 401 "$(code -X POST -d '{"name":"served"}' "$base/api/release")"
check "release with a wrong token" 401 \
  "$(code -X POST -H "Authorization: Bearer ${token}x" -d '{"name":"served"}' "$base/api/release")"
check "a token in the URL is not a token" 401 \
  "$(code -X POST -d '{"name":"served"}' "$base/api/release?token=$token")"
check "release from another Origin" 403 \
  "$(code -X POST -H "Authorization: Bearer $token" -H 'Origin: http://evil.example' -d '{"name":"served"}' "$base/api/release")"
check "a rebinding Host" 421 "$(code -H "Host: evil.example:$port" "$base/api/locks")"
check "localhost names the loopback listen address" 200 "$(code -H "Host: localhost:$port" "$base/api/locks")"
check "--allow-host locks.example" 200 "$(code -H "Host: locks.example" "$base/api/locks")"
check "the https origin of an allowed host (TLS-terminating proxy)" 200 \
  "$(code -X POST -H "Authorization: Bearer $token" -H 'Host: locks.example' -H 'Origin: https://locks.example' -d '{"name":"not-held"}' "$base/api/release")"
check "a bad release body" 400 \
  "$(code -X POST -H "Authorization: Bearer $token" -d 'not json' "$base/api/release")"

# /metrics through Prometheus's parser: every sample of the families we promise (a build
# without prometheus-cpp answers 501 instead).
if curl -fs "$base/api/info" | grep -q '"metrics":false'; then
  check "/metrics without prometheus-cpp" 501 "$(code "$base/metrics")"
  with_metrics=no
else
  with_metrics=yes
fi
curl -fs "$base/metrics" >"$dir/metrics.txt"
mcheck() { if [ $with_metrics = yes ]; then check "$@"; fi; }
mcheck "/metrics answers" 0 $?
metric() {  # metric NAME [LABEL=VALUE]: the value of the first matching sample, or "none"
  "$py" - "$dir/metrics.txt" "$@" <<'PY'
import sys
from prometheus_client.parser import text_string_to_metric_families
text, name = open(sys.argv[1]).read(), sys.argv[2]
want = dict(a.split("=", 1) for a in sys.argv[3:])
for fam in text_string_to_metric_families(text):
    for s in fam.samples:
        if s.name == name and all(s.labels.get(k) == v for k, v in want.items()):
            print(f"{s.value:g}")
            sys.exit(0)
print("none")
PY
}
mcheck "sqlock_store_up" 1 "$(metric sqlock_store_up backend=sqlite)"
mcheck "sqlock_store_held_locks by mode" 1 "$(metric sqlock_store_held_locks backend=sqlite mode=pessimistic)"
mcheck "sqlock_store_held_locks by kind" 1 "$(metric sqlock_store_held_locks backend=sqlite kind=exclusive)"
mcheck "a hold renewed on schedule is not expiring soon" 0 "$(metric sqlock_store_holds_expiring_soon)"
age=$(metric sqlock_store_oldest_hold_age_seconds)
mcheck "oldest hold age is a number >= 0" yes "$("$py" -c "print('yes' if float('$age') >= 0 else 'no')" 2>/dev/null)"
mcheck "HTTP requests are counted by status" yes \
  "$([ "$(metric sqlock_serve_http_requests_total code=421)" != none ] && echo yes)"

out=$(curl -fs -X POST -H "Authorization: Bearer $bob_token" -H "Origin: $base" -d '{"name":"served"}' "$base/api/release")
check "release with a named token and the served Origin" '{"actor":"ops-bob","released":true}' "$out"
grep -q 'force release of "served" by ops-bob from ' "$dir/main.log"
check "the release is logged with the token's name" 0 $?
actor_of() {  # actor_of NAME: the actor of NAME's newest event in /api/events
  curl -fs "$base/api/events?prefix=$1" | "$py" -c 'import json, sys; e = json.load(sys.stdin); print(e[0]["actor"] if e else "none")'
}
check "the audit trail names the token's name as the actor" ops-bob "$(actor_of served)"
wait $held
check "the holder saw the loss (exit 70)" 70 $?
curl -fs "$base/metrics" >"$dir/metrics.txt"
mcheck "forced releases are counted" 1 "$(metric sqlock_serve_force_releases_total result=released)"
mcheck "no lock held after the release" none "$(metric sqlock_store_held_locks mode=pessimistic)"
if grep -qe "$token" -e "$bob_token" "$dir/main.log" "$dir/main.out"; then r=leaked; else r=absent; fi
check "no token's secret appears in the output" absent "$r"

# `sqlock release --force` names its actor too: --actor, else $USER@hostname.
for who in carol@desk ""; do
  "$sqlock" run cli-forced -- sleep 60 &
  held=$!
  for _ in $(seq 400); do curl -fs "$base/api/locks" | grep -q cli-forced && break; sleep 0.05; done
  "$sqlock" release --force ${who:+--actor "$who"} cli-forced >/dev/null
  wait $held
  check "release --force ${who:+--actor $who }is recorded with its actor" \
    "${who:-${USER:-$(id -un)}@$(hostname)}" "$(actor_of cli-forced)"
done
"$sqlock" release --force --actor '' cli-forced 2>/dev/null
check "release --force --actor '' exits 64" 64 $?

# Without a token nothing can be released; with --private nothing can be read either.
start_server open
check "no token configured: release refused" 403 "$(code -X POST -d '{"name":"x"}' "$base/api/release")"
SQLOCK_ADMIN_TOKEN=$token start_server private --private
check "--private: locks need the token" 401 "$(code "$base/api/locks")"
check "--private: /metrics needs the token" 401 "$(code "$base/metrics")"
check "--private: the page itself is served (it asks for the token)" 200 "$(code "$base/")"
check "--private: with the token" 200 "$(code -H "Authorization: Bearer $token" "$base/api/locks")"

# "Expiring soon" by the hold's own lease: --at-most's lease is never renewed, so less than
# half of it is left after half of it; a lease as long renewed every third of it next to it
# never gets there (its renewal may come up to 1.5 s late on a loaded machine).
start_server views
"$sqlock" run --at-most 6s unrenewed -- sleep 60 >/dev/null 2>&1 &
unrenewed=$!
"$sqlock" run --lease 6s renewed -- sleep 60 >/dev/null 2>&1 &
renewed=$!
for _ in $(seq 400); do [ "$(curl -fs "$base/api/locks" | grep -o 'renewed' | wc -l)" = 2 ] && break; sleep 0.05; done
soon() {  # soon NAME: expiring_soon of NAME's row now
  curl -fs "$base/api/locks?prefix=$1" | "$py" -c 'import json,sys; r=json.load(sys.stdin); print(r[0]["expiring_soon"] if r else "gone")'
}
check "a fresh unrenewed hold is not expiring soon" False "$(soon unrenewed)"
sleep 3.5
check "with less than half its lease left it is" True "$(soon unrenewed)"
check "a hold renewed every third of its 6s lease is not" False "$(soon renewed)"
kill $unrenewed $renewed 2>/dev/null

# 10,000 locks straight into the SQLite file, copies of a live hold's row (same boot id and
# clock) that expire 10 minutes later; then one page of them, sorted on the server.
"$sqlock" hold seed >/dev/null &
seed=$!
for _ in $(seq 400); do curl -fs "$base/api/locks" | grep -q '"seed"' && break; sleep 0.05; done
"$py" - "$dir/locks.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], timeout=10)
c.execute("""WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000)
  INSERT INTO sqlock_locks (name, owner, fence, boot_id, acquired_ms, expires_ms, acquired_at, mode, holder)
  SELECT 'bulk:' || i, 'owner-' || i, i * 7, boot_id, acquired_ms, expires_ms + 600000, acquired_at, mode, 'bulk'
    FROM n, sqlock_locks WHERE name = 'seed'""")
c.commit()
PY
page() { curl -fs "$base/api/locks?prefix=bulk:&limit=$1&offset=$2&sort=$3&dir=$4"; }
field() { "$py" -c "import json,sys; p=json.load(sys.stdin); print($1)"; }
check "10,000 locks: the total" 10000 "$(page 100 0 name asc | field 'p["total"]')"
check "one page of them" 100 "$(page 100 0 name asc | field 'len(p["rows"])')"
check "names in natural order" "bulk:1 bulk:2 bulk:3"   "$(page 3 0 name asc | field '" ".join(r["name"] for r in p["rows"])')"
check "fences sorted as numbers, descending" "70000 69993 69986"   "$(page 3 0 fence desc | field '" ".join(str(r["fence"]) for r in p["rows"])')"
check "the last page" "bulk:9999 bulk:10000"   "$(page 100 9998 name asc | field '" ".join(r["name"] for r in p["rows"])')"
check "a bad limit" 400 "$(code "$base/api/locks?limit=x")"
bytes=$(curl -fs -o /dev/null -w '%{size_download}' "$base/api/locks?limit=100&sort=name")
all=$(curl -fs -o /dev/null -w '%{size_download}' "$base/api/locks")
echo "note: 10,001 locks: a page of 100 is $bytes bytes, all of them $all bytes"
kill $seed 2>/dev/null

# Started while the store is down (a PostgreSQL URL through a relay that is not there yet):
# serve runs, /healthz answers 503 until the relay (the store) appears, then 200.
if [ "${SQLOCK_CLI_POSTGRES:-}" = 1 ] && [ -n "${SQLOCK_TEST_POSTGRES_URL:-}" ]; then
  relay_port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  pg_port=$("$py" -c 'import sys, urllib.parse as u; print(u.urlsplit(sys.argv[1]).port or 5432)' "$SQLOCK_TEST_POSTGRES_URL")
  down_url=$("$py" -c 'import sys, re; print(re.sub(r"@[^/?]*", "@127.0.0.1:" + sys.argv[2], sys.argv[1], count=1))'     "$SQLOCK_TEST_POSTGRES_URL" "$relay_port")
  start_server down --url "$down_url" --retry-every 300ms
  check "serve runs while the store is down" yes "$([ -n "$base" ] && echo yes)"
  check "/healthz 503 while the store is down" 503 "$(code "$base/healthz")"
  check "/api/locks 503 while the store is down" 503 "$(code "$base/api/locks")"
  check "the page itself is served" 200 "$(code "$base/")"
  "$py" - "$relay_port" "$pg_port" <<'PY' &
import socket, sys, threading
srv = socket.create_server(("127.0.0.1", int(sys.argv[1])))
def pipe(a, b):
    try:
        while (d := a.recv(65536)):
            b.sendall(d)
    except OSError:
        pass
    finally:
        for s in (a, b):
            try: s.shutdown(socket.SHUT_RDWR)
            except OSError: pass
while True:
    c, _ = srv.accept()
    s = socket.create_connection(("127.0.0.1", int(sys.argv[2])))
    threading.Thread(target=pipe, args=(c, s), daemon=True).start()
    threading.Thread(target=pipe, args=(s, c), daemon=True).start()
PY
  for _ in $(seq 100); do [ "$(code "$base/healthz")" = 200 ] && break; sleep 0.1; done
  check "/healthz 200 once the store answers" 200 "$(code "$base/healthz")"
  check "/api/locks then answers" 200 "$(code "$base/api/locks?prefix=serve-none")"
elif [ "${SQLOCK_TEST_REQUIRE_ALL:-}" = 1 ]; then
  check "PostgreSQL built and SQLOCK_TEST_POSTGRES_URL set" yes no
fi

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all serve checks passed"
