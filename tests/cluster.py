#!/usr/bin/python3
"""A private Redis Cluster on free loopback ports, for the tests (DESIGN.md, "Redis Cluster").

    import cluster
    c = cluster.start_cluster(tmpdir, primaries=3, replicas=1)   # about 1.5 s
    try:
        r = c.client()                       # redis.cluster.RedisCluster on it
        port = c.node_for_slot(cluster.keyslot(b"{839}"))
        c.move_slots([slot], other_port)     # live resharding (traffic may run meanwhile)
        c.kill(port); new = c.wait_failover(port)
    finally:
        c.stop()                             # also at exit, on SIGTERM/SIGINT/SIGHUP

Every node is a redis-server started by this process: --cluster-enabled yes, its
nodes.conf in its own directory tmpdir/node-<n> (the caller owns tmpdir and
removes it), the bus on a free port of its own (not port + 10000, which may be
taken or above 65535), no persistence, --repl-diskless-sync-delay 0 (a replica
syncs at once, not after 5 s), --repl-ping-replica-period 1.  The cluster is made by `redis-cli --cluster
create` (3 or more primaries; 1 or 2, which redis-cli refuses, by CLUSTER
ADDSLOTSRANGE, MEET and REPLICATE).  start_cluster returns once every node says
cluster_state:ok, every node answers the same CLUSTER SLOTS, covering all 16384
slots with every primary's replicas in it, and every replica's link to its
primary is up.

Nothing is left running: stop() sends SIGTERM (and SIGCONT, for a paused node),
then SIGKILL after a grace of 2 s; every cluster not stopped is stopped by an
atexit hook and by handlers of SIGTERM, SIGINT and SIGHUP (installed when
start_cluster runs in the main thread; the previous handler runs after); and
each node gets PR_SET_PDEATHSIG = SIGKILL, so it dies with the thread that
started it even when this process is killed with SIGKILL.  (So start a cluster
from a thread that lives as long as the cluster: the main thread.)

Errors are ClusterError, whose message names the node (port, directory, the
tail of its log) and what it waited for.  Times are seconds unless a name says
_ms.  Needs Debian's python3-redis (4.3) and redis-server/redis-cli 7.
"""
import atexit
import binascii
import ctypes
import logging
import os
import signal
import socket
import subprocess
import threading
import time

import redis
from redis.cluster import ClusterNode, RedisCluster

SLOTS = 16384
HOST = "127.0.0.1"
STOP_GRACE = 2.0  # s between SIGTERM and SIGKILL in stop()


class ClusterError(Exception):
    """The cluster did not reach a state in time, or a command of the harness failed."""


def keyslot(key) -> int:
    """Redis Cluster's key slot: CRC16/XMODEM of the hash tag when non-empty, else the key, mod 16384."""
    if isinstance(key, str):
        key = key.encode()
    s = key.find(b"{")
    if s >= 0:
        e = key.find(b"}", s + 1)
        if e > s + 1:
            key = key[s + 1:e]
    return binascii.crc_hqx(key, 0) % SLOTS


def free_port() -> int:
    """A loopback TCP port that was free a moment ago."""
    s = socket.socket()
    s.bind((HOST, 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ---- processes that cannot outlive us -------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)
_PR_SET_PDEATHSIG = 1


def _die_with_parent():  # preexec_fn: runs in the child between fork and exec
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


_live = set()  # clusters started and not stopped
_live_lock = threading.Lock()
_hooks_installed = False
_prev_handlers = {}  # signal -> the handler before ours


def _stop_all():
    with _live_lock:
        clusters = list(_live)
    for c in clusters:
        c.stop()


def _on_signal(sig, frame):
    _stop_all()
    prev = _prev_handlers.get(sig, signal.SIG_DFL)
    if callable(prev):
        prev(sig, frame)  # SIGINT: Python's handler raises KeyboardInterrupt
    elif prev != signal.SIG_IGN:
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)


def _install_hooks():
    global _hooks_installed
    if _hooks_installed:
        return
    _hooks_installed = True
    atexit.register(_stop_all)
    if threading.current_thread() is not threading.main_thread():
        return  # signal.signal works only there; atexit and PDEATHSIG still hold
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        prev = signal.getsignal(sig)
        if prev == signal.SIG_IGN:
            continue  # e.g. SIGHUP under nohup: keep ignoring it
        _prev_handlers[sig] = prev
        signal.signal(sig, _on_signal)


# ---- one node --------------------------------------------------------------------


class Node:
    """One redis-server of the cluster: ports, directory, process (None once reaped)."""

    def __init__(self, index, dirpath, node_timeout_ms):
        self.index, self.dir, self.node_timeout_ms = index, dirpath, node_timeout_ms
        self.port = self.bus = None
        self.proc = None
        self.id = None  # CLUSTER MYID, once started
        self.log = os.path.join(dirpath, "redis.log")

    def __repr__(self):
        return "node %d (port %s, %s)" % (self.index, self.port, self.dir)

    def spawn(self, taken):
        """Start redis-server on fresh free ports (not in `taken`, a set it adds to); does not wait."""
        while True:
            port, bus = free_port(), free_port()
            if port != bus and port not in taken and bus not in taken:
                break
        taken.update((port, bus))
        self.port, self.bus = port, bus
        self._exec()

    def _exec(self):
        os.makedirs(self.dir, exist_ok=True)
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", HOST, "--daemonize", "no",
             "--cluster-enabled", "yes", "--cluster-config-file", os.path.join(self.dir, "nodes.conf"),
             "--cluster-port", str(self.bus), "--cluster-node-timeout", str(self.node_timeout_ms),
             "--save", "", "--appendonly", "no", "--repl-diskless-sync-delay", "0", "--repl-ping-replica-period", "1",
             "--dir", self.dir, "--logfile", self.log, "--loglevel", "notice"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=_die_with_parent)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def conn(self, timeout=2.0):
        """A new plain connection to this node (redis.Redis; follows no redirection)."""
        return redis.Redis(host=HOST, port=self.port, socket_timeout=timeout, socket_connect_timeout=timeout)

    def answers(self, timeout=0.2):
        """PING answered within `timeout` (a paused or dead node does not)."""
        if not self.alive():
            return False
        r = self.conn(timeout)
        try:
            return r.ping()
        except redis.RedisError:
            return False
        finally:
            r.close()

    def log_tail(self, lines=8):
        try:
            with open(self.log, errors="replace") as f:
                return "".join(f.readlines()[-lines:]).rstrip()
        except OSError as e:
            return "(no log: %s)" % e

    def describe(self):
        """For error messages: which node, whether it runs, the tail of its log."""
        state = "running" if self.alive() else "exited with %s" % (self.proc.returncode if self.proc else "-")
        return "%r, %s; its log ends:\n%s" % (self, state, self.log_tail())

    def stop_begin(self):
        if self.alive():
            for sig in (signal.SIGCONT, signal.SIGTERM):  # SIGCONT: a paused node cannot act on SIGTERM
                try:
                    self.proc.send_signal(sig)
                except ProcessLookupError:
                    pass

    def stop_end(self, deadline):
        if self.proc is None:
            return
        try:
            self.proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


# ---- the cluster -------------------------------------------------------------------


class Cluster:
    """A running cluster.  Ports are ints; `primaries` and `replicas` are the nodes as created
    (primaries in slot order: primaries[0] owns slot 0); current_primaries() is who serves now."""

    def __init__(self, tmpdir, node_timeout_ms):
        self.tmpdir, self.node_timeout_ms = tmpdir, node_timeout_ms
        self.nodes = {}        # port -> Node
        self.primaries = []    # ports, as created, in slot order
        self.replicas = []     # ports, as created
        self.replicas_of = {}  # primary port -> [replica ports], as created
        self.start_s = None    # seconds start_cluster took
        self._slots_before_kill = {}  # port -> slots it owned when kill() was called
        self._migrating = {}   # slot -> (src port, dst port) between begin and finish

    # -- looking at it --

    @property
    def ports(self):
        return sorted(self.nodes)

    def url(self, port=None):
        """redis://127.0.0.1:<port> of `port`, else of the first primary as created that answers."""
        if port is None:
            port = next((p for p in self.primaries if self.nodes[p].answers()), self.primaries[0])
        return "redis://%s:%d" % (HOST, port)

    def conn(self, port, timeout=2.0):
        """A new plain connection to the node on `port` (no redirections followed); close it when done."""
        return self.nodes[port].conn(timeout)

    def reachable(self):
        """Ports of the nodes that answer PING now."""
        return [p for p in self.ports if self.nodes[p].answers()]

    def slot_map(self, port=None):
        """CLUSTER SLOTS of `port` (else of the first reachable node), as a sorted list of
        (start, end, primary port, sorted replica ports)."""
        ports = [port] if port is not None else self.reachable()
        for p in ports:
            r = self.conn(p)
            try:
                return _normal_slots(r.execute_command("CLUSTER", "SLOTS"))
            except redis.RedisError:
                continue
            finally:
                r.close()
        raise ClusterError("no node answers CLUSTER SLOTS (ports %s)" % self.ports)

    def node_for_slot(self, slot):
        """Port of the primary that owns `slot` now (in the first reachable node's view)."""
        for start, end, primary, _ in self.slot_map():
            if start <= slot <= end:
                return primary
        raise ClusterError("no node owns slot %d" % slot)

    def node_for_key(self, key):
        return self.node_for_slot(keyslot(key))

    def slots_of(self, port, smap=None):
        """The slots `port` owns now (a list), from `smap` (slot_map()) or a fresh map."""
        return [s for start, end, p, _ in (smap or self.slot_map()) if p == port for s in range(start, end + 1)]

    def current_primaries(self):
        """Ports of the primaries that serve slots now, in slot order."""
        seen = []
        for _, _, p, _ in self.slot_map():
            if p not in seen:
                seen.append(p)
        return seen

    def client(self, **kw):
        """A redis.cluster.RedisCluster on the cluster (every node a startup node); `kw` go to it.
        redis-py logs each MOVED, ASK and TRYAGAIN it follows with a traceback at ERROR level; a
        NullHandler on its logger keeps them off stderr when nothing else is configured."""
        log = logging.getLogger("redis.cluster")
        if not log.handlers:
            log.addHandler(logging.NullHandler())
        kw.setdefault("socket_timeout", 5)
        rc = RedisCluster(startup_nodes=[ClusterNode(HOST, p) for p in self.ports if self.nodes[p].alive()], **kw)
        # redis-py 4.3: a re-initialisation of the slot map (after a failover, say) deep-copies the
        # connection arguments for each startup node it has no connection to, and with them
        # RedisCluster.on_connect, bound to a client that by then holds a lock: "cannot pickle
        # '_thread.lock' object", and the client never learns the new map.  A callable that
        # deep-copies as itself avoids that.
        ck = rc.nodes_manager.connection_kwargs
        if callable(ck.get("redis_connect_func")):
            ck["redis_connect_func"] = _NoDeepCopy(ck["redis_connect_func"])
        return rc

    # -- waiting for it --

    def _node_state(self, port, want_replicas):
        """None when node `port` is ready, else why not (a string); its normal CLUSTER SLOTS in state[port]."""
        r = self.conn(port, 1.0)
        try:
            info = r.execute_command("CLUSTER", "INFO")
            if isinstance(info, bytes):
                info = info.decode()
            if "cluster_state:ok" not in info:
                return "cluster_state is not ok", None
            smap = _normal_slots(r.execute_command("CLUSTER", "SLOTS"))
            if sum(e - s + 1 for s, e, _, _ in smap) != SLOTS:
                return "CLUSTER SLOTS covers %d slots" % sum(e - s + 1 for s, e, _, _ in smap), smap
            if want_replicas is not None:
                for s, e, p, reps in smap:
                    if len(reps) < want_replicas.get(p, 0):
                        return "primary %d has %d of %d replicas in CLUSTER SLOTS" % (
                            p, len(reps), want_replicas[p]), smap
            rep = r.info("replication")
            if rep.get("role") == "slave" and rep.get("master_link_status") != "up":
                return "its link to its primary is %s" % rep.get("master_link_status"), smap
            return None, smap
        except redis.RedisError as e:
            return "%s: %s" % (type(e).__name__, e), None
        finally:
            r.close()

    def wait_ok(self, timeout=10.0, ports=None, want_replicas=None):
        """Until every node of `ports` (default: every reachable one) says cluster_state:ok and all
        answer the same CLUSTER SLOTS covering 16384 slots, each replica's link up (and each primary
        with want_replicas[port] replicas, when given).  Returns the map; ClusterError naming a node
        that is not there yet on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            check = ports if ports is not None else self.reachable()
            why, maps = {}, {}
            for p in check:
                why[p], maps[p] = self._node_state(p, want_replicas)
            bad = [p for p in check if why[p] is not None]
            if check and not bad:
                first = maps[check[0]]
                differ = [p for p in check if maps[p] != first]
                if not differ:
                    return first
                bad = differ
                for p in differ:
                    why[p] = "its CLUSTER SLOTS differs from node %d's: %s vs %s" % (check[0], maps[p], first)
            if time.monotonic() >= deadline:
                if not check:
                    raise ClusterError("no node of the cluster answers (ports %s)" % self.ports)
                n = self.nodes[bad[0]]
                raise ClusterError("cluster not ready after %.1f s: %s; %s" % (timeout, why[bad[0]], n.describe()))
            time.sleep(0.02)

    # -- doing things to it --

    def kill(self, port, sig=signal.SIGKILL):
        """Send `sig` to the node on `port`.  SIGKILL, SIGTERM, SIGINT: also reap it (up to 5 s);
        SIGSTOP pauses it (resume() continues it).  The slots it owned are remembered for
        wait_failover."""
        n = self.nodes[port]
        try:
            self._slots_before_kill[port] = self.slots_of(port)
        except ClusterError:
            pass
        if not n.alive():
            return
        n.proc.send_signal(sig)
        if sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT):
            try:
                n.proc.wait(5)
            except subprocess.TimeoutExpired:
                n.proc.kill()
                n.proc.wait()

    def resume(self, port):
        """SIGCONT to a node paused by kill(port, signal.SIGSTOP)."""
        if self.nodes[port].alive():
            self.nodes[port].proc.send_signal(signal.SIGCONT)

    def restart(self, port, timeout=5.0):
        """Start a killed node again: same port, bus port, directory and nodes.conf (it rejoins: as a
        replica of whoever took over its slots, once the cluster tells it).  Waits for PING only."""
        n = self.nodes[port]
        if n.alive():
            return
        n._exec()
        _wait_answers([n], timeout)

    def wait_failover(self, old_primary_port, timeout=10.0):
        """After kill(old_primary_port): until another node (a replica) owns every slot the old
        primary owned and every reachable node says cluster_state:ok with the same map.  Returns
        the new owner's port; ClusterError on timeout, naming what was still wrong."""
        slots = self._slots_before_kill.get(old_primary_port)
        if not slots:
            raise ClusterError("node %d owned no slot when it was killed (kill() it first)" % old_primary_port)
        deadline = time.monotonic() + timeout
        while True:
            left = max(0.0, deadline - time.monotonic())
            try:
                smap = self.wait_ok(timeout=min(left, 1.0))
                owners = {self.owner_in(smap, x) for x in slots}
                if len(owners) == 1 and old_primary_port not in owners:
                    return owners.pop()
                why = "the slots of %d are owned by %s" % (old_primary_port, sorted(owners))
            except ClusterError as e:
                why = str(e)
            if time.monotonic() >= deadline:
                raise ClusterError("no failover of node %d within %.1f s: %s" % (old_primary_port, timeout, why))
            time.sleep(0.05)

    @staticmethod
    def owner_in(smap, slot):
        """The primary port that owns `slot` in `smap` (a slot_map()), or None."""
        for s, e, p, _ in smap:
            if s <= slot <= e:
                return p
        return None

    def _ids(self):
        """port -> node id, in the first reachable node's CLUSTER NODES."""
        ids = {}
        for p in self.reachable():
            r = self.conn(p)
            try:
                for line in r.execute_command("CLUSTER", "NODES").decode().splitlines():
                    f = line.split()
                    ids[int(f[1].split("@")[0].rsplit(":", 1)[1])] = f[0]
                return ids
            except redis.RedisError:
                continue
            finally:
                r.close()
        raise ClusterError("no node answers CLUSTER NODES")

    def begin_migration(self, slot, dst_port):
        """CLUSTER SETSLOT <slot> IMPORTING on dst_port and MIGRATING on its owner; from here until
        finish_migration, the owner answers ASK for keys it does not hold (TRYAGAIN for a
        multi-key command of which it holds some).  Returns the source port (None: dst owns it)."""
        src = self.node_for_slot(slot)
        if src == dst_port:
            return None
        ids = self._ids()
        with self.conn(dst_port) as d, self.conn(src) as s:
            d.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", ids[src])
            s.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", ids[dst_port])
        self._migrating[slot] = (src, dst_port)
        return src

    def migrate_keys(self, slot, batch=100, max_batches=None, pause=0.0, keys=None):
        """MIGRATE the keys of `slot` from its source to its destination (begin_migration first),
        `batch` keys at a time (CLUSTER GETKEYSINSLOT, then MIGRATE ... KEYS k1 .. kn), `pause` s
        between batches, until none is left (or after max_batches).  With `keys` (a list), exactly
        those, in that order (a test that wants a path's keys moved at a given moment).  Returns the
        number of keys sent."""
        src, dst = self._migrating[slot]
        moved, batches = 0, 0
        todo = list(keys) if keys is not None else None
        with self.conn(src, 10.0) as s:
            while max_batches is None or batches < max_batches:
                if todo is None:
                    part = s.execute_command("CLUSTER", "GETKEYSINSLOT", slot, batch)
                else:
                    part, todo = todo[:batch], todo[batch:]
                if not part:
                    break
                rep = s.execute_command("MIGRATE", HOST, dst, "", 0, 5000, "KEYS", *part)
                if rep not in (b"OK", b"NOKEY", "OK", "NOKEY", True):
                    raise ClusterError("MIGRATE of slot %d from %d to %d answered %r" % (slot, src, dst, rep))
                moved += len(part)
                batches += 1
                if pause:
                    time.sleep(pause)
        return moved

    def finish_migration(self, slot):
        """CLUSTER SETSLOT <slot> NODE <dst> on the destination, the source, then every other
        primary that answers: the slot is the destination's."""
        src, dst = self._migrating.pop(slot)
        ids = self._ids()
        order = [dst, src] + [p for p in self.current_primaries() if p not in (src, dst)]
        for i, p in enumerate(order):
            try:
                with self.conn(p) as r:
                    r.execute_command("CLUSTER", "SETSLOT", slot, "NODE", ids[dst])
            except redis.RedisError as e:
                if i < 2:
                    raise ClusterError("CLUSTER SETSLOT %d NODE on %d: %s" % (slot, p, e))

    def move_slots(self, slots, dst_port, batch=100, pause=0.0, timeout=10.0):
        """Live resharding of `slots` (ints) to the primary on dst_port, one slot after another:
        begin_migration, migrate_keys(batch, pause), finish_migration; then until every reachable
        node agrees on the new map.  Safe to call from a thread while clients run.  Returns the
        number of keys moved."""
        moved = 0
        for slot in slots:
            if self.begin_migration(slot, dst_port) is None:
                continue
            moved += self.migrate_keys(slot, batch=batch, pause=pause)
            self.finish_migration(slot)
        deadline = time.monotonic() + timeout
        while True:
            smap = self.wait_ok(timeout=max(0.0, deadline - time.monotonic()))
            if all(self.owner_in(smap, s) == dst_port for s in slots):
                return moved
            if time.monotonic() >= deadline:
                raise ClusterError("slots %s are not all node %d's after moving them" % (list(slots)[:8], dst_port))
            time.sleep(0.02)

    def stop(self):
        """Kill every node (SIGTERM, SIGKILL after STOP_GRACE s) and reap it.  Idempotent; the
        directories stay (under the caller's tmpdir)."""
        with _live_lock:
            _live.discard(self)
        nodes = list(self.nodes.values())
        for n in nodes:
            n.stop_begin()
        deadline = time.monotonic() + STOP_GRACE
        for n in nodes:
            n.stop_end(deadline)

    def pids(self):
        """Pids of the nodes still running (for a test that checks nothing is left)."""
        return [n.proc.pid for n in self.nodes.values() if n.alive()]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class _NoDeepCopy:
    """A callable that copy.deepcopy leaves as it is (see Cluster.client)."""

    def __init__(self, f):
        self.f = f

    def __call__(self, *a, **kw):
        return self.f(*a, **kw)

    def __deepcopy__(self, memo):
        return self


def _normal_slots(reply):
    """CLUSTER SLOTS as a sorted list of (start, end, primary port, sorted replica ports)."""
    out = []
    for e in reply:
        out.append((int(e[0]), int(e[1]), int(e[2][1]), tuple(sorted(int(x[1]) for x in e[3:]))))
    return sorted(out)


def _wait_answers(nodes, timeout):
    """Until each node answers PING.  Returns the nodes that died meanwhile (a port clash, say);
    ClusterError naming a node that runs but does not answer."""
    deadline = time.monotonic() + timeout
    waiting, died = list(nodes), []
    while waiting:
        for n in list(waiting):
            if not n.alive():
                waiting.remove(n)
                died.append(n)
            elif n.answers():
                waiting.remove(n)
        if waiting and time.monotonic() >= deadline:
            raise ClusterError("redis-server does not answer PING after %.1f s: %s" % (timeout, waiting[0].describe()))
        if waiting:
            time.sleep(0.01)
    return died


def _ranges(primaries):
    """Slot ranges (first, last) of `primaries` nodes, split as redis-cli --cluster create does."""
    per, out, first = SLOTS / primaries, [], 0
    for i in range(primaries):
        last = SLOTS - 1 if i == primaries - 1 else int(i * per + per - 1 + 0.5)
        out.append((first, last))
        first = last + 1
    return out


def _create_by_hand(c, nodes, primaries, replicas):
    """The cluster of 1 or 2 primaries that redis-cli will not create: ADDSLOTSRANGE, epochs, MEET,
    REPLICATE (each primary's replicas are the next nodes after the primaries, in order)."""
    for i, (lo, hi) in enumerate(_ranges(primaries)):
        with nodes[i].conn() as r:
            r.execute_command("CLUSTER", "ADDSLOTSRANGE", lo, hi)
    for i, n in enumerate(nodes):
        with n.conn() as r:
            r.execute_command("CLUSTER", "SET-CONFIG-EPOCH", i + 1)
    with nodes[0].conn() as r:
        for n in nodes[1:]:
            r.execute_command("CLUSTER", "MEET", HOST, n.port, n.bus)
    deadline = time.monotonic() + 10
    for n in nodes:  # every node knows every other, handshakes done
        while True:
            with n.conn() as r:
                lines = r.execute_command("CLUSTER", "NODES").decode().splitlines()
            if len(lines) == len(nodes) and not any("handshake" in x or "noaddr" in x for x in lines):
                break
            if time.monotonic() >= deadline:
                raise ClusterError("nodes did not meet after 10 s: %s knows %d of %d" % (n, len(lines), len(nodes)))
            time.sleep(0.02)
    for i in range(primaries):
        for j in range(replicas):
            rep = nodes[primaries + i * replicas + j]
            with rep.conn() as r:
                r.execute_command("CLUSTER", "REPLICATE", nodes[i].id)


def start_cluster(tmpdir, primaries=3, replicas=1, node_timeout_ms=1000, timeout=30.0):
    """Start primaries * (1 + replicas) nodes and make them a cluster (module docstring); returns
    the Cluster.  `replicas` is per primary; node_timeout_ms is --cluster-node-timeout (failure
    detection: a failover takes about twice it); `timeout` bounds each waiting step.  On any
    failure every node started is stopped and ClusterError says which node and why."""
    if primaries < 1 or replicas < 0:
        raise ValueError("start_cluster: primaries >= 1 and replicas >= 0")
    t0 = time.monotonic()
    _install_hooks()
    c = Cluster(tmpdir, node_timeout_ms)
    with _live_lock:
        _live.add(c)
    try:
        total = primaries * (1 + replicas)
        nodes = [Node(i, os.path.join(tmpdir, "node-%d" % i), node_timeout_ms) for i in range(total)]
        taken = set()
        for n in nodes:
            n.spawn(taken)
        pending = nodes
        for attempt in range(5):  # a node that died at once lost its port to someone else: new ports
            died = _wait_answers(pending, timeout)
            if not died:
                break
            if attempt == 4:
                raise ClusterError("redis-server keeps exiting at start: %s" % died[0].describe())
            for n in died:
                try:
                    os.unlink(os.path.join(n.dir, "nodes.conf"))
                except FileNotFoundError:
                    pass
                n.spawn(taken)
            pending = died
        for n in nodes:
            c.nodes[n.port] = n
            with n.conn() as r:
                n.id = r.execute_command("CLUSTER", "MYID").decode()
        if primaries >= 3:
            cmd = ["redis-cli", "--cluster", "create"] + ["%s:%d" % (HOST, n.port) for n in nodes] + \
                  ["--cluster-replicas", str(replicas), "--cluster-yes"]
            try:
                res = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
            except subprocess.TimeoutExpired as e:
                raise ClusterError("redis-cli --cluster create did not finish in %.1f s; its output:\n%s" % (
                    timeout, (e.stdout or b"").decode(errors="replace")[-2000:]))
            if res.returncode != 0:
                raise ClusterError("redis-cli --cluster create failed (exit %d):\n%s" % (
                    res.returncode, (res.stdout + res.stderr).decode(errors="replace")[-2000:]))
        else:
            _create_by_hand(c, nodes, primaries, replicas)
        # who is what: the primaries own slots; redis-cli chose each one's replicas
        by_id = {n.id: n.port for n in nodes}
        deadline = time.monotonic() + timeout
        while True:
            with nodes[0].conn() as r:
                lines = r.execute_command("CLUSTER", "NODES").decode().splitlines()
            roles = {}
            for line in lines:
                f = line.split()
                roles[by_id.get(f[0])] = by_id.get(f[3]) if "slave" in f[2] else None
            if None not in roles and len([p for p in roles.values() if p is not None]) == primaries * replicas:
                break
            if time.monotonic() >= deadline:
                raise ClusterError("the replicas are not all known as replicas after %.1f s: %s" % (timeout, lines))
            time.sleep(0.02)
        ports = [n.port for n in nodes]
        if replicas:
            # Redis 7.0's CLUSTER SLOTS leaves out a replica whose replication offset is 0, which it
            # is until something goes down the replication stream (a PING every
            # repl-ping-replica-period, 10 s by default): a FLUSHALL of each (empty) primary once
            # the replicas' links are up sends one.
            c.wait_ok(timeout, ports=ports)
            for port, prim in roles.items():
                if prim is None:
                    with c.conn(port) as r:
                        r.flushall()
        smap = c.wait_ok(timeout, ports=ports,
                         want_replicas={p: replicas for p, m in roles.items() if m is None} if replicas else None)
        for _, _, p, _ in smap:
            if p not in c.primaries:
                c.primaries.append(p)
        c.replicas_of = {p: sorted(x for x, m in roles.items() if m == p) for p in c.primaries}
        c.replicas = [x for p in c.primaries for x in c.replicas_of[p]]
        c.start_s = time.monotonic() - t0
        return c
    except BaseException:
        c.stop()
        raise


if __name__ == "__main__":
    # A quick look: start one, print its map and the time it took, stop it.
    import shutil
    import sys
    import tempfile

    d = tempfile.mkdtemp(prefix="sluice-cluster-")
    try:
        p = int(sys.argv[1]) if len(sys.argv) > 1 else 3
        r = int(sys.argv[2]) if len(sys.argv) > 2 else 1
        c = start_cluster(d, primaries=p, replicas=r)
        print("started %d+%d in %.2f s: primaries %s, replicas %s" % (p, p * r, c.start_s, c.primaries, c.replicas_of))
        for s in c.slot_map():
            print("  slots %5d-%5d: %d %s" % s)
        t = time.monotonic()
        c.stop()
        print("stopped in %.2f s" % (time.monotonic() - t))
    finally:
        shutil.rmtree(d, ignore_errors=True)
