"""Private etcd for the chaos driver: one member or a cluster of etcd-server members on fresh
loopback ports, started directly with scripts/servers.d/50-etcd.sh's flags (the shared dev
members are never touched). Offers what servers.py's classes offer (url, admin_url, pids(),
restart(), stop()) and, for a cluster, nodes, leader(), kill_member(), restart_member()."""
import json
import os
import signal
import subprocess
import urllib.request

from servers import free_port, log_tails, make_twice, wait_until


def etcd_status(port):
    """The member's /v3/maintenance/status answer (JSON gateway), or None when it does not
    answer within a second."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v3/maintenance/status", data=b"{}",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=1) as r:
            return json.load(r)
    except (OSError, ValueError):
        return None


def etcd_healthy(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
        return json.load(r).get("health") == "true"


class EtcdMember:
    """One etcd member in its own directory; started as a child of the driver, so kill() can
    reap it. The flags are 50-etcd.sh's, with a smaller backend quota, frequent snapshots (a
    restart then replays a snapshot and the WAL after it) and loopback-fast raft timing
    (heartbeat 50 ms, election 500 ms; etcd's least lease TTL follows: about 1 s)."""

    def __init__(self, run_dir, name, cport, pport):
        self.dir, self.name, self.port, self.peer_port = run_dir, name, cport, pport
        os.makedirs(run_dir, exist_ok=True)
        self.proc, self.cluster, self.started = None, None, False

    def start(self):
        """Starts the member (on its data when it ran before); does not wait for it: a member
        of a cluster serves only once a quorum is up."""
        state = "existing" if self.started else "new"
        self.started = True
        c, p = f"http://127.0.0.1:{self.port}", f"http://127.0.0.1:{self.peer_port}"
        out = open(os.path.join(self.dir, "stdout.log"), "a")
        self.proc = subprocess.Popen(
            ["etcd", "--name", self.name, "--data-dir", os.path.join(self.dir, "data"),
             "--listen-client-urls", c, "--advertise-client-urls", c, "--listen-peer-urls", p,
             "--initial-advertise-peer-urls", p, "--initial-cluster", self.cluster,
             "--initial-cluster-state", state, "--initial-cluster-token", "sqlock-chaos",
             "--quota-backend-bytes", str(128 << 20), "--snapshot-count", "5000",
             "--heartbeat-interval", "50", "--election-timeout", "500", "--logger", "zap",
             "--log-outputs", os.path.join(self.dir, "etcd.log")],
            stdout=out, stderr=subprocess.STDOUT)
        out.close()

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait()


class Etcd:
    """A one-member etcd (members=1) or a cluster of etcd-server members on fresh loopback ports.
    A cluster that does not come up is shown - each member's log tail - and made once more on
    fresh ports before the run gives up. nodes (the members) serve the minority / majority
    faults, leader() / kill_member() / restart_member() the leader and member kills."""

    def __init__(self, run_dir, members=1):
        make_twice(self, run_dir, members)
        hosts = ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)
        self.url = self.admin_url = f"etcd://{hosts}/chaos"

    def make(self, run_dir, members):
        self.nodes = [EtcdMember(os.path.join(run_dir, f"etcd{i + 1}"), f"m{i + 1}", free_port(),
                                 free_port()) for i in range(members)]
        self.dirs = [n.dir for n in self.nodes]
        cluster = ",".join(f"{n.name}=http://127.0.0.1:{n.peer_port}" for n in self.nodes)
        for n in self.nodes:
            n.cluster = cluster
            n.start()
        for i in range(members):
            self.wait(i)

    def wait(self, i):
        n = self.nodes[i]

        def up():
            if n.proc.poll() is not None:
                raise RuntimeError(f"etcd member {i + 1} exited with {n.proc.returncode}")
            return etcd_healthy(n.port)
        wait_until(f"etcd member {i + 1} on {n.port}", 60, up)

    def log_tails(self):
        return log_tails([n.dir for n in getattr(self, "nodes", [])], ("etcd.log", "stdout.log"))

    def pids(self):
        return [n.proc.pid for n in self.nodes if n.proc and n.proc.poll() is None]

    def leader(self):
        for i, n in enumerate(self.nodes):
            s = etcd_status(n.port)
            if s and s.get("leader") == s.get("header", {}).get("member_id"):
                return i
        return None

    def kill_member(self, i):
        self.nodes[i].kill()

    def restart_member(self, i):
        self.nodes[i].start()
        self.wait(i)

    def restart(self):
        for n in self.nodes:
            n.kill()
        for n in self.nodes:
            n.start()
        for i in range(len(self.nodes)):
            self.wait(i)

    def stop(self):
        for n in getattr(self, "nodes", []):
            n.kill()
