# ZooKeeper 3.8 (Debian package `zookeeper`) for the zookeeper backend's tests, started directly
# with java (no init scripts), 127.0.0.1 only, -Xmx128m, tickTime=500 so session expiry tests are
# quick (minimum session timeout 1s), container nodes checked every second, and a member that
# finds no quorum asks again every 2 s at most (ZooKeeper's default backs off to 60 s, which on a
# loaded machine can keep a member that started before its peers out of the ensemble that long):
#   standalone server on 127.0.0.1:22181                             SQLOCK_TEST_ZOOKEEPER_URL
#   3-server ensemble on 127.0.0.1:22281-22283 (quorum 2238N, election 2248N)
#                                                                   SQLOCK_TEST_ZOOKEEPER_ENSEMBLE_URL
#   $SQLOCK_RUN_DIR/zookeeper/ctl.sh {stop|start|leader|wait} [N]   SQLOCK_TEST_ZOOKEEPER_ENSEMBLE_CTL
# ctl.sh lets a test stop and restart ensemble member N (1..3) and ask which member leads.
# Data directories live under $SQLOCK_RUN_DIR/zookeeper/{standalone,ens1,ens2,ens3}. The ports
# are below the kernel's ephemeral range (32768-60999), so no client socket can take them.

zookeeper_dir() { echo "$SQLOCK_RUN_DIR/zookeeper"; }

# Answers 0 when the server on port $1 serves requests (the `srvr` four-letter word reports a
# Mode: standalone, leader or follower).
zookeeper_serving() {
  local out
  out=$(timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1 && printf srvr >&3 && cat <&3" 2>/dev/null) ||
    return 1
  grep -q '^Mode: ' <<<"$out"
}

# Writes a server directory: zoo.cfg, myid, run.sh (starts the JVM in the background, pid file).
zookeeper_make_server() {
  local d=$1 port=$2 id=$3 servers=$4
  mkdir -p "$d/data"
  cat >"$d/zoo.cfg" <<CFG
tickTime=500
initLimit=20
syncLimit=10
dataDir=$d/data
clientPort=$port
clientPortAddress=127.0.0.1
minSessionTimeout=1000
maxSessionTimeout=60000
maxClientCnxns=0
4lw.commands.whitelist=srvr,ruok,stat,mntr,cons
admin.enableServer=false
autopurge.purgeInterval=0
$servers
CFG
  [ -n "$id" ] && echo "$id" >"$d/data/myid"
  cat >"$d/log4j.properties" <<'LOG'
log4j.rootLogger=WARN, F
log4j.appender.F=org.apache.log4j.FileAppender
log4j.appender.F.File=${zk.log.file}
log4j.appender.F.layout=org.apache.log4j.PatternLayout
log4j.appender.F.layout.ConversionPattern=%d{ISO8601} [myid:%X{myid}] %-5p [%t] %c{1}: %m%n
LOG
  cat >"$d/run.sh" <<RUN
#!/usr/bin/env bash
# Starts this ZooKeeper server in the background; its pid goes to $d/zk.pid.
cd "$d"
java -Xmx128m -Xms32m -XX:+UseSerialGC -Djava.net.preferIPv4Stack=true \\
  -Dznode.container.checkIntervalMs=1000 -Dzookeeper.jmx.log4j.disable=true \\
  -Dzookeeper.fastleader.maxNotificationInterval=2000 \\
  -Dzk.log.file="$d/server.log" -Dlog4j.configuration="file:$d/log4j.properties" \\
  -cp "/usr/share/java/zookeeper.jar:/usr/share/java/log4j-1.2.jar:/usr/share/java/slf4j-log4j12.jar" \\
  org.apache.zookeeper.server.quorum.QuorumPeerMain "$d/zoo.cfg" >"$d/stdout.log" 2>&1 &
echo \$! >"$d/zk.pid"
RUN
  chmod +x "$d/run.sh"
}

# Stops the server whose directory is $1 (TERM, then KILL after 10 s).
zookeeper_stop_server() {
  local d=$1 pid
  [ -f "$d/zk.pid" ] || return 0
  pid=$(cat "$d/zk.pid" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$d/zk.pid"
}

stop_zookeeper() {
  local d
  d=$(zookeeper_dir)
  for s in standalone ens1 ens2 ens3; do zookeeper_stop_server "$d/$s"; done
}

start_zookeeper() {
  local d servers ctl
  d=$(zookeeper_dir)
  if ! command -v java >/dev/null 2>&1 || [ ! -e /usr/share/java/zookeeper.jar ]; then
    echo "servers.sh: java or /usr/share/java/zookeeper.jar missing (install zookeeper)" >&2
    return 1
  fi
  stop_zookeeper
  rm -rf "$d"
  mkdir -p "$d"
  zookeeper_make_server "$d/standalone" 22181 "" ""
  servers=""
  for i in 1 2 3; do
    servers+="server.$i=127.0.0.1:$((22380 + i)):$((22480 + i))"$'\n'
  done
  for i in 1 2 3; do zookeeper_make_server "$d/ens$i" $((22280 + i)) "$i" "$servers"; done
  ctl="$d/ctl.sh"
  cat >"$ctl" <<CTL
#!/usr/bin/env bash
# Test control of the ZooKeeper ensemble: stop N | start N | leader | wait N
set -euo pipefail
d="$d"
serving() {
  local out
  out=\$(timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/\$1 && printf srvr >&3 && cat <&3" 2>/dev/null) || return 1
  grep -q '^Mode: ' <<<"\$out"
}
case "\${1:-}" in
  stop)
    pid=\$(cat "\$d/ens\$2/zk.pid" 2>/dev/null || true)
    if [ -n "\$pid" ]; then
      kill "\$pid" 2>/dev/null || true
      for _ in \$(seq 1 50); do kill -0 "\$pid" 2>/dev/null || break; sleep 0.2; done
      kill -9 "\$pid" 2>/dev/null || true
    fi
    rm -f "\$d/ens\$2/zk.pid" ;;
  start)  # no-op when it runs already (a second JVM would fail to bind and own the pid file)
    pid=\$(cat "\$d/ens\$2/zk.pid" 2>/dev/null || true)
    if [ -n "\$pid" ] && kill -0 "\$pid" 2>/dev/null; then exit 0; fi
    "\$d/ens\$2/run.sh" ;;
  wait)
    for _ in \$(seq 1 300); do serving \$((22280 + \$2)) && exit 0; sleep 0.2; done
    exit 1 ;;
  leader)
    for i in 1 2 3; do
      out=\$(timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/\$((22280 + i)) && printf srvr >&3 && cat <&3" 2>/dev/null || true)
      if grep -q '^Mode: leader' <<<"\$out"; then echo "\$i"; exit 0; fi
    done
    exit 1 ;;
  *) echo "usage: ctl.sh stop|start|wait N | leader" >&2; exit 64 ;;
esac
CTL
  chmod +x "$ctl"
  "$d/standalone/run.sh"
  for i in 1 2 3; do "$d/ens$i/run.sh"; done
  wait_for "ZooKeeper on 127.0.0.1:22181" 90 zookeeper_serving 22181 || {
    tail -30 "$d/standalone/server.log" "$d/standalone/stdout.log" >&2
    return 1
  }
  for i in 1 2 3; do
    wait_for "ZooKeeper ensemble member $i on 127.0.0.1:$((22280 + i))" 90 \
      zookeeper_serving $((22280 + i)) || {
      tail -30 "$d/ens$i/server.log" "$d/ens$i/stdout.log" >&2
      return 1
    }
  done
  emit SQLOCK_TEST_ZOOKEEPER_URL "zookeeper://127.0.0.1:22181/sqlock-test"
  emit SQLOCK_TEST_ZOOKEEPER_ENSEMBLE_URL \
    "zookeeper://127.0.0.1:22281,127.0.0.1:22282,127.0.0.1:22283/sqlock-test"
  emit SQLOCK_TEST_ZOOKEEPER_ENSEMBLE_CTL "$ctl"
}
