#!/usr/bin/env bash
# `sqlock serve` from outside: --listen checks, the token, Host and Origin checks, --private,
# /healthz, and /metrics parsed by Prometheus's own text parser (python3-prometheus-client).
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

# start_server NAME ARGS...: starts sqlock serve on a free port; sets $base.
start_server() {
  local name=$1
  shift
  "$sqlock" serve --listen 127.0.0.1:0 "$@" >"$dir/$name.out" 2>"$dir/$name.log" &
  for _ in $(seq 100); do [ -s "$dir/$name.out" ] && break; sleep 0.05; done
  base=$(head -1 "$dir/$name.out")
  base=${base%/}
}

printf 'tok-%s\n' "$RANDOM$RANDOM$RANDOM" >"$dir/token"
token=$(cat "$dir/token")
start_server main --token-file "$dir/token" --renewal-interval 1h --allow-host locks.example
case "$base" in http://127.0.0.1:[1-9]*) r=yes ;; *) r=no ;; esac
check "--listen 127.0.0.1:0 prints the bound port ($base)" yes "$r"
port=${base##*:}

# ":0" is loopback on any free port, and the port printed is the one listened on.
"$sqlock" serve --listen :0 >"$dir/short.out" 2>/dev/null &
short=$!
for _ in $(seq 100); do [ -s "$dir/short.out" ] && break; sleep 0.05; done
short_base=$(head -1 "$dir/short.out")
short_base=${short_base%/}
case "$short_base" in http://127.0.0.1:[1-9]*) r=yes ;; *) r=no ;; esac
check "--listen :0 prints a loopback address and the bound port ($short_base)" yes "$r"
check "the printed port answers" 200 "$(code "$short_base/healthz")"
kill $short

"$sqlock" run served -- sleep 60 &
held=$!
for _ in $(seq 100); do curl -fs "$base/api/locks" | grep -q served && break; sleep 0.05; done

check "page" 200 "$(code "$base/")"
curl -s -D - -o /dev/null "$base/" | grep -qi "^content-security-policy: default-src 'none'"
check "page has a Content-Security-Policy" 0 $?
check "/healthz while the store answers" 200 "$(code "$base/healthz")"
check "/api/locks is readable without the token" 200 "$(code "$base/api/locks")"
check "/api/events: SQLite keeps no audit trail" 501 "$(code "$base/api/events")"
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
mcheck "holds expiring within one renewal interval (1h)" 1 "$(metric sqlock_store_holds_expiring_soon)"
age=$(metric sqlock_store_oldest_hold_age_seconds)
mcheck "oldest hold age is a number >= 0" yes "$("$py" -c "print('yes' if float('$age') >= 0 else 'no')" 2>/dev/null)"
mcheck "HTTP requests are counted by status" yes \
  "$([ "$(metric sqlock_serve_http_requests_total code=421)" != none ] && echo yes)"

out=$(curl -fs -X POST -H "Authorization: Bearer $token" -H "Origin: $base" -d '{"name":"served"}' "$base/api/release")
check "release with the token and the served Origin" '{"released":true}' "$out"
wait $held
check "the holder saw the loss (exit 70)" 70 $?
curl -fs "$base/metrics" >"$dir/metrics.txt"
mcheck "forced releases are counted" 1 "$(metric sqlock_serve_force_releases_total result=released)"
mcheck "no lock held after the release" none "$(metric sqlock_store_held_locks mode=pessimistic)"
if grep -q "$token" "$dir/main.log" "$dir/main.out"; then r=leaked; else r=absent; fi
check "the token never appears in the output" absent "$r"

# Without a token nothing can be released; with --private nothing can be read either.
start_server open
check "no token configured: release refused" 403 "$(code -X POST -d '{"name":"x"}' "$base/api/release")"
SQLOCK_ADMIN_TOKEN=$token start_server private --private
check "--private: locks need the token" 401 "$(code "$base/api/locks")"
check "--private: /metrics needs the token" 401 "$(code "$base/metrics")"
check "--private: the page itself is served (it asks for the token)" 200 "$(code "$base/")"
check "--private: with the token" 200 "$(code -H "Authorization: Bearer $token" "$base/api/locks")"

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all serve checks passed"
