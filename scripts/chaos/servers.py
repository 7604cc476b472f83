"""Private server instances for the chaos driver: faults that freeze, kill or restart a server
never touch the shared test servers. Each instance lives in its own run directory on its own
loopback port and is started the way scripts/servers.d/ starts the shared ones (PostgreSQL and
MariaDB through scripts/servers.sh with a port override; ZooKeeper through the server maker in
40-zookeeper.sh; Redis directly; etcd in etcd_servers.py). Every class offers:
url (what workers use), admin_url (what `sqlock migrate` and the end-of-run list use), pids()
(processes to SIGSTOP), restart() (kill hard, start on the same data, wait until it serves) and
stop()."""
import os
import re
import signal
import socket
import subprocess
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


_handed_out = set()


def free_port():
    """A free loopback port below the ephemeral range (no client socket can take it), never one
    this process handed out before: a server made of several ports (a ZooKeeper ensemble asks for
    nine) binds them only later, so a bind test alone could hand the same port out twice."""
    for _ in range(200):
        port = 27100 + int.from_bytes(os.urandom(2), "little") % 2800
        if port in _handed_out:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                _handed_out.add(port)
                return port
            except OSError:
                continue
    raise RuntimeError("no free port in 27100-29899")


def wait_until(what, seconds, probe):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            if probe():
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not come up within {seconds}s")


def children(pid):
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def read_env(path):
    env = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"export (\w+)='(.*)'", line.strip())
            if m:
                env[m.group(1)] = m.group(2)
    return env


def servers_sh(run_dir, action, name, extra_env):
    env = dict(os.environ, SQLOCK_RUN_DIR=run_dir, **extra_env)
    subprocess.run(["bash", os.path.join(REPO, "scripts", "servers.sh"), action, name], env=env,
                   check=action == "start", stdout=subprocess.DEVNULL)


class Redis:
    """One redis-server with an fsync-always append-only file, so a restart keeps the keys."""

    def __init__(self, run_dir, port=None):
        self.port = port or free_port()
        self.dir = os.path.join(run_dir, f"redis-{self.port}")
        os.makedirs(self.dir, exist_ok=True)
        self.proc = None
        self.start()
        self.url = self.admin_url = f"redis://127.0.0.1:{self.port}"

    def start(self):
        self.proc = subprocess.Popen(
            ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
             "--appendonly", "yes", "--appendfsync", "always", "--dir", self.dir,
             "--logfile", os.path.join(self.dir, "redis.log")], stdout=subprocess.DEVNULL)
        wait_until(f"redis on {self.port}", 20, self.serving)

    def serving(self):
        with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")

    def pids(self):
        return [self.proc.pid]

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def restart(self):
        self.kill()
        self.start()

    def stop(self):
        self.kill()


class Redlock:
    """Five independent Redis masters."""

    def __init__(self, run_dir):
        self.nodes = [Redis(run_dir) for _ in range(5)]
        hosts = ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)
        self.url = self.admin_url = f"redlock://{hosts}"

    def pids(self):
        return [p for n in self.nodes for p in n.pids()]

    def restart(self):
        for n in self.nodes:
            n.restart()

    def stop(self):
        for n in self.nodes:
            n.stop()


class Postgres:
    """A PostgreSQL 15 cluster made by scripts/servers.d/10-postgres.sh on a private port."""

    def __init__(self, run_dir):
        self.run_dir, self.port = run_dir, free_port()
        servers_sh(run_dir, "start", "postgres", {"SQLOCK_POSTGRES_PORT": str(self.port)})
        env = read_env(os.path.join(run_dir, "env.sh"))
        self.url, self.admin_url = env["SQLOCK_TEST_POSTGRES_APP_URL"], env["SQLOCK_TEST_POSTGRES_URL"]
        self.data = os.path.join(run_dir, "postgres", "data")
        self.sock = os.path.join(run_dir, "postgres")
        self.bin = os.environ.get("SQLOCK_POSTGRES_BIN", "/usr/lib/postgresql/15/bin")
        # The shared servers run with synchronous_commit = off (disposable data); a crash then
        # loses commits already acknowledged - fences issued again after restart(). Durable here.
        self.psql("ALTER SYSTEM SET synchronous_commit = on")
        self.psql("SELECT pg_reload_conf()")

    def as_pg(self, cmd):
        if os.getuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--"] + cmd
        return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()

    def psql(self, sql, port=None, sock=None):
        """Runs one statement as the superuser over the Unix socket; returns its output."""
        return self.as_pg([os.path.join(self.bin, "psql"), "-X", "-q", "-tA", "-h",
                           sock or self.sock, "-p", str(port or self.port), "-U", "postgres",
                           "-d", "postgres", "-c", sql])

    def ctl(self, *args):
        cmd = [os.path.join(self.bin, "pg_ctl"), "-D", self.data, *args]
        if os.getuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--"] + cmd
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def pids(self):
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            pm = int(f.readline())
        return [pm] + children(pm)

    def restart(self):
        self.ctl("-m", "immediate", "-w", "-t", "60", "stop")  # SIGQUIT: a crash, no checkpoint
        self.ctl("-l", os.path.join(self.run_dir, "postgres", "server.log"), "-w", "-t", "60",
                 "start")

    def stop(self):
        servers_sh(self.run_dir, "stop", "postgres", {})


class Mysql:
    """A MariaDB made by scripts/servers.d/20-mysql.sh on a private port."""

    def __init__(self, run_dir):
        self.run_dir, self.port = run_dir, free_port()
        servers_sh(run_dir, "start", "mysql", {"SQLOCK_MYSQL_PORT": str(self.port)})
        env = read_env(os.path.join(run_dir, "env.sh"))
        self.url, self.admin_url = env["SQLOCK_TEST_MYSQL_EXEC_URL"], env["SQLOCK_TEST_MYSQL_URL"]
        self.dir = os.path.join(run_dir, "mysql")
        self.proc = None  # the server restart() started (a child of this process)

    def pids(self):
        with open(os.path.join(self.dir, "mysqld.pid")) as f:
            return [int(f.read())]

    def restart(self):
        for p in self.pids():
            os.kill(p, signal.SIGKILL)
        if self.proc:
            self.proc.wait()
        time.sleep(0.5)
        binary = "mariadbd" if subprocess.run(["which", "mariadbd"], capture_output=True).returncode == 0 else "/usr/sbin/mariadbd"
        self.proc = subprocess.Popen([binary, f"--defaults-file={self.dir}/my.cnf"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until("MariaDB restart", 60, lambda: subprocess.run(
            ["mariadb", "--no-defaults", "--protocol=socket", f"--socket={self.dir}/mysqld.sock",
             "-uroot", "-e", "SELECT 1"], capture_output=True).returncode == 0)

    def stop(self):
        if self.proc:
            # A server restart() started is this process's child: ended and reaped here (left
            # to servers.sh, its zombie looked alive until servers.sh gave up after 30 s).
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        servers_sh(self.run_dir, "stop", "mysql", {})


def log_tails(dirs, names, lines=15):
    """The last lines of each named log in each member directory, for a server that did not come
    up."""
    out = []
    for d in dirs:
        for name in names:
            try:
                with open(os.path.join(d, name), errors="replace") as f:
                    tail = f.readlines()[-lines:]
            except OSError:
                continue
            out.append(f"--- {os.path.join(d, name)}\n" + "".join(tail))
    return "\n".join(out)


def make_twice(server, run_dir, members):
    """server.make(run_dir, members); when a member does not come up, shows each member's log
    tail (server.log_tails()), stops what was started and makes it once more on fresh ports."""
    for attempt in (1, 2):
        try:
            server.make(os.path.join(run_dir, f"try{attempt}") if attempt > 1 else run_dir, members)
            return
        except RuntimeError as e:
            print(f"chaos: {e}; member logs:\n{server.log_tails()}", flush=True)
            server.stop()
            if attempt == 2:
                raise


def zk_serving(port):
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        s.sendall(b"srvr")
        data = b""
        while chunk := s.recv(4096):
            data += chunk
    m = re.search(rb"^Mode: (\w+)", data, re.M)
    return m.group(1).decode() if m else None


class ZooKeeper:
    """A standalone server (members=1) or an ensemble, made by 40-zookeeper.sh's server maker.
    An ensemble that does not form (a member never serves) is shown - each member's log tail -
    and made once more on fresh ports before the run gives up."""

    def __init__(self, run_dir, members=1):
        make_twice(self, run_dir, members)
        hosts = ",".join(f"127.0.0.1:{p}" for p in self.ports)
        self.url = self.admin_url = f"zookeeper://{hosts}/chaos"

    def make(self, run_dir, members):
        self.dirs, self.ports = [], []
        quorum = ""
        peers = [(free_port(), free_port()) for _ in range(members)] if members > 1 else []
        for i, (q, e) in enumerate(peers, 1):
            quorum += f"server.{i}=127.0.0.1:{q}:{e}\n"
        for i in range(members):
            d, port = os.path.join(run_dir, f"zk{i + 1}"), free_port()
            myid = str(i + 1) if members > 1 else ""
            script = (f"source '{REPO}/scripts/servers.d/40-zookeeper.sh'; "
                      f"zookeeper_make_server '{d}' {port} '{myid}' \"$1\"")
            subprocess.run(["bash", "-c", script, "zk", quorum], check=True)
            self.dirs.append(d)
            self.ports.append(port)
        for i in range(members):
            self.start(i)
        for i in range(members):
            self.wait(i)

    def log_tails(self):
        return log_tails(self.dirs, ("server.log", "stdout.log"))

    def start(self, i):
        subprocess.run([os.path.join(self.dirs[i], "run.sh")], check=True)

    def wait(self, i):
        wait_until(f"ZooKeeper member {i + 1}", 90, lambda: zk_serving(self.ports[i]))

    def member_pid(self, i):
        with open(os.path.join(self.dirs[i], "zk.pid")) as f:
            return int(f.read())

    def pids(self):
        return [self.member_pid(i) for i in range(len(self.dirs))]

    def leader(self):
        for i, p in enumerate(self.ports):
            try:
                if zk_serving(p) == "leader":
                    return i
            except OSError:
                pass
        return None

    def kill_member(self, i):
        os.kill(self.member_pid(i), signal.SIGKILL)
        time.sleep(0.2)

    def restart_member(self, i):
        self.start(i)
        self.wait(i)

    def restart(self):
        for i in range(len(self.dirs)):
            self.kill_member(i)
        for i in range(len(self.dirs)):
            self.start(i)
        for i in range(len(self.dirs)):
            self.wait(i)

    def stop(self):
        for i in range(len(self.dirs)):
            try:
                os.kill(self.member_pid(i), signal.SIGKILL)
            except (OSError, ValueError):
                pass


class PostgresPair:
    """A primary (the Postgres class above) and a streaming standby made with pg_basebackup,
    synchronous (synchronous_standby_names = '*', synchronous_commit = on) or asynchronous.
    Clients get a two-host URL with target_session_attrs=read-write, so after failover() -
    the primary crashed (pg_ctl -m immediate) and the standby promoted - they reconnect to the
    new primary by themselves."""

    def __init__(self, run_dir, synchronous):
        self.primary = p = Postgres(run_dir)
        self.standby_dir = os.path.join(run_dir, "standby")
        self.port = free_port()
        os.makedirs(self.standby_dir)
        if os.getuid() == 0:
            subprocess.run(["chown", "postgres:postgres", self.standby_dir], check=True)
        os.chmod(self.standby_dir, 0o700)
        p.psql("CREATE ROLE chaos_replicator REPLICATION LOGIN PASSWORD 'repl'")
        if synchronous:
            p.psql("ALTER SYSTEM SET synchronous_standby_names = '*'")
        p.psql("SELECT pg_reload_conf()")
        data = os.path.join(self.standby_dir, "data")
        # -c fast: the backup's checkpoint at once, not spread over checkpoint_timeout.
        p.as_pg(["env", "PGPASSWORD=repl", os.path.join(p.bin, "pg_basebackup"), "-h",
                 "127.0.0.1", "-p", str(p.port), "-U", "chaos_replicator", "-D", data, "-R",
                 "-c", "fast", "-X", "stream"])
        with open(os.path.join(data, "postgresql.auto.conf"), "a") as f:
            # Promoted, it has no standby of its own: it must not wait for one.
            f.write(f"port = {self.port}\nunix_socket_directories = '{self.standby_dir}'\n"
                    "synchronous_standby_names = ''\n")
        self.data = data
        self.ctl("-l", os.path.join(self.standby_dir, "server.log"), "-w", "-t", "60", "start")
        wait_until("standby streaming", 60, lambda: p.psql(
            "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'") == "1")
        hosts = f"127.0.0.1:{p.port},127.0.0.1:{self.port}"
        self.url = p.url.replace(f"127.0.0.1:{p.port}", hosts) + "?target_session_attrs=read-write"
        self.admin_url = p.admin_url  # migrate before the failover
        self.admin_after = p.admin_url.replace(f"127.0.0.1:{p.port}", hosts) + \
            "?target_session_attrs=read-write"
        self.failed_over = False

    def ctl(self, *args):
        self.primary.as_pg([os.path.join(self.primary.bin, "pg_ctl"), "-D", self.data, *args])

    def pids(self):
        return self.primary.pids()

    def failover(self, lag=0.0):
        """Crashes the primary and promotes the standby; returns when it accepts writes. With
        lag > 0 the primary's WAL sender is stopped (SIGSTOP) for lag seconds first and killed
        with the primary: the standby misses what was committed meanwhile - nothing on a
        synchronous pair, whose commits wait for the standby."""
        if lag > 0:
            sender = int(self.primary.psql("SELECT pid FROM pg_stat_replication"))
            os.kill(sender, signal.SIGSTOP)
            time.sleep(lag)
            os.kill(sender, signal.SIGKILL)
        self.primary.ctl("-m", "immediate", "-w", "-t", "60", "stop")
        self.ctl("-w", "-t", "60", "promote")
        self.failed_over = True
        self.admin_url = self.admin_after

    def stop(self):
        try:
            self.ctl("-m", "immediate", "-w", "-t", "30", "stop")
        except subprocess.CalledProcessError:
            pass
        self.primary.stop()
