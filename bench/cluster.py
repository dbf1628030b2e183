#!/usr/bin/python3
"""The drain on 1 and 3 primaries of a Redis Cluster (issue 10, "Benchmark").

Run by bench/bench.sh as its part `cluster` (BENCH_PARTS=cluster runs it
alone), or from the repository root:

    DRAIN_BENCH=build/normal/bench/drain_bench /usr/bin/python3 bench/cluster.py

1. Starts, with tests/cluster.py, a private Redis Cluster of 1 primary and one
   of 3 primaries (no replicas, --cluster-node-timeout 15000, Redis's
   default), and a plain redis-server beside them as a reference (cluster
   support off), all on free loopback ports in a temporary directory; every
   one is stopped on exit.
2. Pins them with taskset (util-linux): the client (drain_bench, which runs
   the worker of libsluice: the daemon's one thread) on the last CPU, and the
   Redis nodes round-robin on the others, so with N CPUs and N-1 >= 3 each
   primary has a CPU of its own; with fewer (2 CPUs: every node on CPU 0)
   the 3 primaries share a CPU, and the run says so.  BENCH_CLUSTER_PIN=spread:
   the nodes round-robin on every CPU, the client's too (on 2 CPUs, 2
   primaries get one each: BENCH_CLUSTER_SETUPS="1 2", the check of the
   model's parallel part).  BENCH_PIN=0: no pinning.
3. Rounds (BENCH_REPEAT, 3): each round runs `drain_bench cluster` once on
   every set-up in turn (single, 1 primary, 3 primaries), so the machine's
   other load falls on all alike: fill BENCH_CLUSTER_PATHS (100,000) leaky
   buckets over all 1024 shards (state as leaky_bucket.lua makes it, three
   samples checked against the script), one full drain sweep (worker_sweep,
   batch BENCH_BATCH, 500) that must take exactly 2 entries from every
   bucket, and ZCARD of every bucket after it (3 each).
4. Prints per round and then the medians [min-max]: wall time, buckets and
   entries a second, the worker's thread CPU, the round trips (rbatch_run
   calls) and commands in each; per primary its Redis CPU (INFO cpu,
   used_cpu_sys + used_cpu_user, before and after), shard calls and reads
   (INFO stats total_reads_processed: one a round trip that reaches it), so
   the pipeline depth each node sees; the ratios of 3 primaries against 1
   in the same rounds; and the 30-primary model's figures (BENCHMARKS.md,
   "Redis Cluster: drain on 1 and 3 primaries").

Figures, not pass/fail.  Exit 1 only on a real error: a node does not start,
drain_bench fails (a wrong drained count, a bucket not holding 3 entries, a
fill that differs from the client script's).
"""
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import cluster  # noqa: E402  (tests/cluster.py)

DRAIN_BENCH = os.environ.get("DRAIN_BENCH", os.path.join(ROOT, "build/normal/bench/drain_bench"))
REPEAT = int(os.environ.get("BENCH_REPEAT", "3"))
PATHS = int(os.environ.get("BENCH_CLUSTER_PATHS", "100000"))
BATCH = int(os.environ.get("BENCH_BATCH", "500"))
PIN = os.environ.get("BENCH_PIN", "1") != "0"
# apart: the client alone on the last CPU, the nodes on the others; spread: the nodes round-robin on every CPU
# (the client's too), so that on a small host each node of a small cluster can have a CPU of its own
PIN_MODE = os.environ.get("BENCH_CLUSTER_PIN", "apart")
SETUPS = os.environ.get("BENCH_CLUSTER_SETUPS", "single 1 3").split()
MODEL_PRIMARIES = 30
# worker/due.c: commands a round trip, and the due paths' worth of shard calls in one
DUE_DEPTH, DUE_ROUND_PATHS, DUE_NODES = 64, 4096, 8
SHARDS = 1024


def die(msg):
    print("cluster bench: %s" % msg, file=sys.stderr)
    sys.exit(1)


def taskset(cpu, pid):
    subprocess.run(["taskset", "-a", "-p", "-c", str(cpu), str(pid)], check=True, stdout=subprocess.DEVNULL)


class Single:
    """A plain redis-server (cluster support off), the reference of the same machine."""

    def __init__(self, tmpdir):
        self.dir = os.path.join(tmpdir, "single")
        os.makedirs(self.dir)
        for _ in range(10):
            self.port = cluster.free_port()
            self.proc = subprocess.Popen(
                ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                 "--dir", self.dir, "--logfile", os.path.join(self.dir, "redis.log"), "--databases", "1"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                preexec_fn=cluster._die_with_parent)
            for _ in range(50):
                if self.proc.poll() is not None:
                    break
                try:
                    with socket.create_connection(("127.0.0.1", self.port), 0.2) as s:
                        s.sendall(b"PING\r\n")
                        if s.recv(16).startswith(b"+PONG"):
                            return
                except OSError:
                    pass
                time.sleep(0.1)
            self.stop()
        die("redis-server did not start (log in %s)" % self.dir)

    def pids(self):
        return [self.proc.pid]

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def kv(line):
    return {k: v for k, v in re.findall(r"(\w+)=(\S+)", line)}


def med(v):
    return statistics.median(v)


def span(v, fmt):
    return "%s [%s-%s]" % (fmt % med(v), fmt % min(v), fmt % max(v))


def run_bench(url, client_pin):
    cmd = client_pin + [DRAIN_BENCH, "cluster", "--redis", url, "--paths", str(PATHS), "--repeat", "1",
                        "--batch-size", str(BATCH)]
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in p.stdout.splitlines():
        if not re.match(r"(SETUP|FIG|NODE|IDLE) ", line):
            print("  " + line)
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        die("%s exited %d" % (" ".join(cmd), p.returncode))
    setup, fig, nodes, idle = None, None, [], []
    for line in p.stdout.splitlines():
        if line.startswith("SETUP "):
            setup = kv(line)
        elif line.startswith("FIG "):
            fig = kv(line)
        elif line.startswith("NODE "):
            nodes.append(kv(line))
        elif line.startswith("IDLE "):
            idle.append(float(kv(line)["cpu_ms"]))
    if not setup or not fig or not nodes:
        die("drain_bench cluster printed no figures")
    return setup, fig, nodes, idle


def sweep_rounds(primaries, calls):
    """worker/due.c's round trips over the 1024 shards, all due, on `primaries` equal slot ranges: at most
    `calls` shard calls per primary and DUE_DEPTH commands per primary (DUE_NODES primaries at most) a
    round trip, a shard whose primary has its share waiting for the next one.  Returns, per round trip,
    (nodes reached, its busiest node's calls)."""
    ranges = cluster._ranges(primaries)
    owner = []
    for k in range(SHARDS):
        s = cluster.keyslot("{%d}" % k)
        owner.append(next(i for i, (a, b) in enumerate(ranges) if a <= s <= b))
    pending = [True] * SHARDS
    depth = DUE_DEPTH * min(max(primaries, 1), DUE_NODES)
    cursor, rounds = 0, []
    while any(pending):
        if cursor >= SHARDS:
            cursor = 0
        taken, per = 0, {}
        while cursor < SHARDS and taken < depth:
            if pending[cursor]:
                node = owner[cursor]
                if per.get(node, 0) == calls:
                    if primaries <= 1:
                        break
                else:
                    per[node] = per.get(node, 0) + 1
                    pending[cursor] = False
                    taken += 1
            cursor += 1
        rounds.append((len(per), max(per.values())))
    return rounds


def main():
    if not os.access(DRAIN_BENCH, os.X_OK):
        die("%s is not an executable (make build/normal/bench/drain_bench, or set DRAIN_BENCH)" % DRAIN_BENCH)
    for tool in ("redis-server", "redis-cli") + (("taskset",) if PIN else ()):
        if not shutil.which(tool):
            die("%s not found" % tool)
    ncpu = len(os.sched_getaffinity(0))
    pin = PIN and ncpu >= 2
    client_cpu = ncpu - 1
    if PIN_MODE not in ("apart", "spread"):
        die("BENCH_CLUSTER_PIN is apart or spread (got %r)" % PIN_MODE)
    redis_cpus = (list(range(ncpu)) if PIN_MODE == "spread" else list(range(ncpu - 1))) if pin else []
    with open("/proc/cpuinfo") as f:
        model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    with open("/proc/loadavg") as f:
        load0 = " ".join(f.read().split()[:3])
    rv = subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout.strip()
    print("== Redis Cluster: drain on 1 and 3 primaries (bench/cluster.py), %s" %
          time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    print("machine: %d CPUs, %s; load average %s; %s" % (ncpu, model, load0, rv.replace("Redis server ", "redis ")))
    tmp = tempfile.mkdtemp(prefix="sluice-cluster-bench.")
    started = {}
    try:
        for s in SETUPS:
            if s == "single":
                started[s] = Single(tmp)
            else:
                started[s] = cluster.start_cluster(os.path.join(tmp, "c%s" % s), primaries=int(s), replicas=0,
                                                   node_timeout_ms=15000)
        client_pin = []
        if pin:
            for s, c in started.items():
                pids = c.pids()
                for i, pid in enumerate(pids):
                    taskset(redis_cpus[i % len(redis_cpus)], pid)
            client_pin = ["taskset", "-c", str(client_cpu)]
            most = max([int(s) for s in SETUPS if s != "single"] or [1])
            shared = len(redis_cpus) < most
            print("pinned: the client (drain_bench: the worker's one thread) to CPU %d%s; the Redis nodes round-robin "
                  "to CPU%s %s%s" % (client_cpu, " (beside a node)" if PIN_MODE == "spread" else "",
                                     "s" if len(redis_cpus) > 1 else "", ",".join(map(str, redis_cpus)),
                                     "; so the %d primaries SHARE %s (this host has %d CPUs): their sum of Redis CPU "
                                     "is real, their parallel speed-up is not measured here" % (
                                         most, "CPU 0" if len(redis_cpus) == 1 else "CPUs", ncpu) if shared else
                                     "; each primary of a cluster has a CPU of its own"))
        else:
            print("pinned: no (BENCH_PIN=0 or one CPU): the nodes and the client share the host's %d CPUs" % ncpu)
        print("set-ups: %s; %d buckets, batch %d, %d rounds (each round runs every set-up once, in turn)" % (
            ", ".join("a plain Redis" if s == "single" else "%s primar%s" % (s, "y" if s == "1" else "ies")
                      for s in SETUPS), PATHS, BATCH, REPEAT))
        print()
        own_cpu = {s: pin and (s == "single" or int(s) <= len(redis_cpus)) for s in SETUPS}
        runs = {s: [] for s in SETUPS}
        for r in range(REPEAT):
            for s, c in started.items():
                url = "redis://127.0.0.1:%d" % (c.port if s == "single" else c.primaries[0])
                print("-- round %d, %s" % (r + 1, "plain Redis" if s == "single" else "%s primar%s" % (
                    s, "y" if s == "1" else "ies")))
                runs[s].append(run_bench(url, client_pin))
                sys.stdout.flush()
        with open("/proc/loadavg") as f:
            load1 = " ".join(f.read().split()[:3])
    finally:
        for c in started.values():
            c.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    print()
    print("load average at the end: %s" % load1)
    summary = {}
    for s in SETUPS:
        rr = runs[s]
        wall = [float(f["wall"]) for _, f, _, _ in rr]
        tcpu = [float(f["thread_cpu"]) for _, f, _, _ in rr]
        rcpu = [sum(float(n["cpu"]) for n in ns) for _, _, ns, _ in rr]
        ents = int(rr[0][1]["entries"])
        rts = int(rr[0][1]["runs"])
        cmds = int(rr[0][1]["cmds"])
        batches = int(rr[0][1]["batches"])
        np = int(rr[0][0]["primaries"])
        rtt = [float(st["rtt_us"]) for st, _, _, _ in rr]
        per_node = []
        for i in range(np):
            cpu_i = [float(ns[i]["cpu"]) for _, _, ns, _ in rr]
            calls = int(rr[0][2][i]["evalsha"])
            reads = int(rr[0][2][i]["reads"])
            per_node.append(dict(cpu=cpu_i, calls=calls, reads=reads, buckets=int(rr[0][2][i]["buckets"]),
                                 idle=[it[i] for _, _, _, it in rr if it]))
        summary[s] = dict(wall=wall, tcpu=tcpu, rcpu=rcpu, ents=ents, rts=rts, cmds=cmds, batches=batches, np=np,
                          nodes=per_node, rtt=rtt)
        name = "plain Redis " if s == "single" else "%s primar%s" % (s, "y  " if s == "1" else "ies")
        print("RESULT cluster %s sweep of %d buckets: %s s, %.0f buckets/s, %.0f entries/s; Redis CPU %.2f us a "
              "bucket (all nodes); the worker's thread %.3f s CPU (%.2f us a bucket); %d shard calls in %d round "
              "trips (%.1f commands each); a PING round trip %.0f us" % (
                  name, PATHS, span(wall, "%.3f"), PATHS / med(wall), ents / med(wall), med(rcpu) * 1e6 / PATHS,
                  med(tcpu), med(tcpu) * 1e6 / PATHS, batches, rts, cmds / rts, med(rtt)))
        for i, n in enumerate(per_node):
            print("RESULT cluster %s   primary %d: %d buckets, Redis CPU %s s (%.2f us a bucket, busy %.0f %% of the "
                  "sweep; idle %.1f ms/s), %d shard calls in %d reads: %.2f calls (%.0f buckets) in flight a round "
                  "trip" % (name, i, n["buckets"], span(n["cpu"], "%.3f"), med(n["cpu"]) * 1e6 / n["buckets"],
                            100 * med(n["cpu"]) / med(wall), med(n["idle"]) if n["idle"] else 0, n["calls"],
                            n["reads"], n["calls"] / max(n["reads"], 1), n["buckets"] / max(n["reads"], 1)))
    for s in summary:
        if s in ("single", "1") or "1" not in summary:
            continue
        a, b = summary["1"], summary[s]
        ratio = [y / x for x, y in zip(a["wall"], b["wall"])]
        print("RESULT cluster %s primaries / 1 primary, same rounds: wall %.2fx (rounds %s), so %.2fx the buckets/s; "
              "Redis CPU summed over the nodes %.2fx; the worker's thread CPU %.2fx; round trips %d / %d%s" % (
                  s, med(ratio), ", ".join("%.2f" % x for x in ratio), 1 / med(ratio),
                  med(b["rcpu"]) / med(a["rcpu"]), med(b["tcpu"]) / med(a["tcpu"]), b["rts"], a["rts"],
                  "" if own_cpu[s] else " (its nodes shared CPUs)"))
    if "single" in summary and "1" in summary:
        a, b = summary["single"], summary["1"]
        print("RESULT cluster 1 primary / plain Redis: wall %.2fx, Redis CPU %.2fx (the cost of cluster mode on one node)"
              % (med(b["wall"]) / med(a["wall"]), med(b["rcpu"]) / med(a["rcpu"])))
    if "1" in summary:
        print_model(summary, own_cpu)


def print_model(summary, own_cpu):
    """The figures of BENCHMARKS.md's 30-primary model, from this run's (1 primary alone on its CPU)."""
    one = summary["1"]
    n = MODEL_PRIMARIES
    calls_rt = min(DUE_DEPTH, max(1, DUE_ROUND_PATHS // BATCH))  # per primary, a round trip
    rounds1, roundsn = sweep_rounds(1, calls_rt), sweep_rounds(n, calls_rt)
    rts = len(rounds1)
    per_bucket = med(one["rcpu"]) / PATHS
    per_call = med(one["rcpu"]) / one["batches"]     # Redis CPU a shard call of PATHS/1024 buckets, s
    ceiling = 1 / per_bucket                         # one primary's thread, buckets/s
    client_rt = {s: med(v["tcpu"]) / v["rts"] for s, v in summary.items()}  # the worker's CPU a round trip, s
    r3 = sweep_rounds(3, calls_rt)
    t3, b3 = statistics.mean(x for x, _ in r3), statistics.mean(y for _, y in r3)
    tn, bn = statistics.mean(x for x, _ in roundsn), statistics.mean(y for _, y in roundsn)
    # the worker's CPU a round trip: a fixed part and a part per node reached (1 primary: 1 node), fitted on
    # the largest cluster measured
    big = max([int(s) for s in summary if s not in ("single", "1")] or [1])
    tb = statistics.mean(x for x, _ in sweep_rounds(big, calls_rt)) if big > 1 else 1
    c_node = max(0.0, (client_rt[str(big)] - client_rt["1"]) / (tb - 1)) if big > 1 else 0.0
    c_base = client_rt["1"] - c_node
    cn = c_base + c_node * tn
    print("MODEL a round trip carries up to %d shard calls per primary (worker/due.c: min(DUE_DEPTH %d, "
          "DUE_ROUND_PATHS %d / batch %d) a primary, %d primaries at most): a sweep of the 1024 shards is %d round "
          "trips on 1 primary, %d on 3, %d on %d" % (calls_rt, DUE_DEPTH, DUE_ROUND_PATHS, BATCH, DUE_NODES, rts,
                                                    len(r3), len(roundsn), n))
    print("MODEL per primary (1 primary, alone on its CPU): %.2f us of Redis CPU a bucket, %.0f us a shard call of "
          "%.0f buckets: a ceiling of %.0f buckets/s; x %d primaries on %d machines = %.2f M buckets/s" % (
              per_bucket * 1e6, per_call * 1e6, PATHS / SHARDS, ceiling, n, n, ceiling * n / 1e6))
    print("MODEL the worker's one thread: %s us of CPU a round trip (%.0f us + %.0f us a node reached); %.2f us a "
          "bucket on 1 primary: alone it could drive %.2f M buckets/s" % (
              ", ".join("%s %.0f" % ("plain" if s == "single" else s + "p", v * 1e6) for s, v in client_rt.items()),
              c_base * 1e6, c_node * 1e6, med(one["tcpu"]) * 1e6 / PATHS, PATHS / med(one["tcpu"]) / 1e6))
    print("MODEL a round trip on the real shard->slot map (redis-cli's equal slot ranges): 3 primaries: "
          "%.2f nodes reached, the busiest %.2f calls; %d primaries: %.2f nodes reached, the busiest "
          "%.2f calls" % (t3, b3, n, tn, bn))
    # the model against what was measured: every cluster whose nodes each had a CPU of their own
    for s, v in summary.items():
        if s in ("single", "1") or not own_cpu.get(s):
            continue
        p = int(s)
        rp = sweep_rounds(p, calls_rt)
        bp = statistics.mean(y for _, y in rp)
        rtp = med(v["rtt"]) * 1e-6 + bp * per_call + client_rt[s]
        print("MODEL check, %d primaries with a CPU each: predicted %.3f s a sweep (%d round trips: busiest %.2f calls "
              "x %.0f us + %.0f us + the worker's %.0f us), measured %s s" % (
                  p, len(rp) * rtp, len(rp), bp, per_call * 1e6, med(v["rtt"]), client_rt[s] * 1e6,
                  span(v["wall"], "%.3f")))
    for rtt_us in (med(one["rtt"]), 200.0, 500.0):
        rtt = rtt_us * 1e-6
        rt1 = rtt + calls_rt * per_call + client_rt["1"]
        rtn = rtt + bn * per_call + cn
        sw1, swn = rts * rt1, len(roundsn) * rtn
        print("MODEL %d primaries, network round trip %.0f us: a round trip %.2f ms (%.0f us + busiest %.2f calls x "
              "%.0f us + the worker's %.0f us; 1 primary: %.2f ms); a sweep of %d buckets %.3f s, %.0f buckets/s "
              "(1 primary: %.0f, so %.1fx; %.0f %% of the %d primaries' ceiling); the worker's thread busy %.0f %%; "
              "at the drain tick's budget (80 ms of 100) %.0f buckets/s" % (
                  n, rtt_us, rtn * 1e3, rtt_us, bn, per_call * 1e6, cn * 1e6, rt1 * 1e3, PATHS, swn, PATHS / swn,
                  PATHS / sw1, sw1 / swn, 100 * PATHS / swn / (ceiling * n), n, 100 * cn / rtn, 0.8 * PATHS / swn))


if __name__ == "__main__":
    main()
