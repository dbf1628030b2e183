#!/usr/bin/python3
"""1, 2 and 3 sluiced sharing the same leaky buckets by shard leases (issue 11, "Benchmark").

Run by bench/bench.sh as its part `daemons` (BENCH_PARTS=daemons runs it alone), or from the
repository root, after `make all lua`:

    SLUICED=build/normal/bin/sluiced /usr/bin/python3 bench/daemons.py

1. Starts a private redis-server (tests/conformance.py's start_redis: a free loopback port,
   no persistence) and, with 2 or more CPUs and BENCH_PIN not 0, pins it to CPU 0 and this
   script and every sluiced to the others (by this process's affinity, which the children
   inherit), so Redis's CPU figure is Redis's alone.
2. Starts daemon b1 (the daemon's defaults: drain every 100 ms, lease_ttl_ms 2000; only
   max_clock_skew_ms 0, so the drain acts at Redis time); measures 1, 2 and 3 daemons (as in 3)
   with nothing registered: what being there costs Redis (heartbeats, lease renewals, the
   registries' rolling poll, the rules copies' checks); then fills BENCH_DAEMONS_PATHS
   (100,000) leaky buckets through build/lua/leaky_bucket.lua (pipelined EVALSHA, explicit
   parameters, tests/daemons_e2e.py's fill: 10 entries each, capacity 100, leaking
   BENCH_DAEMONS_RATE (0.05) a second, the buckets' leaks spread evenly over every leak
   period, so the due work is the same in every window of one length; 10 entries at 0.05/s
   last 200 s, longer than the run).
3. Rounds (BENCH_REPEAT, 3) on those same buckets: with b1 alone, then b1 and b2, then b1, b2
   and b3 (each set-up waits until the 1024 lease keys are held by its daemons and stable,
   then 1 s), over a window of BENCH_DAEMONS_WINDOW s (5): Redis CPU (INFO cpu,
   used_cpu_sys + used_cpu_user), EVALSHA calls (INFO commandstats cmdstat_evalsha: the
   drain's shard calls, the prune job's and the lease scripts'), and the drain shard calls
   the daemons counted (the sum of /v1/worker jobs.drain.batches) and the entries they
   drained; then b2 and b3 stop (SIGTERM) for the next round.
   Each set-up also prints the commands a second Redis ran (INFO commandstats: the scripts'
   own commands are counted too) and the registry polls the daemons counted.
4. Prints a table per round, then per set-up the medians [min-max] a second and the ratios to
   one daemon in the same round (target: at most 1.1x; N daemons do the work of one), as
   "RESULT daemons ..." lines (bench/bench.sh's summary).

Figures, not pass/fail.  Exit 1 only on a real error: Redis or a daemon not starting, the
leases not settling, a daemon counting errors or fenced calls, or not exiting 0 on SIGTERM.
"""
import os
import statistics
import sys
import tempfile
import shutil
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import daemons_e2e as de  # noqa: E402  (tests/daemons_e2e.py: fill, leases, daemons)
from conformance import start_redis  # noqa: E402

SLUICED = os.environ.get("SLUICED", os.path.join(ROOT, "build/normal/bin/sluiced"))
LUA_DIR = os.environ.get("LUA_DIR", os.path.join(ROOT, "build/lua"))
REPEAT = int(os.environ.get("BENCH_REPEAT", "3"))
PATHS = int(os.environ.get("BENCH_DAEMONS_PATHS", "100000"))
RATE = float(os.environ.get("BENCH_DAEMONS_RATE", "0.05"))
WINDOW = float(os.environ.get("BENCH_DAEMONS_WINDOW", "5"))
PIN = os.environ.get("BENCH_PIN", "1") != "0"
COUNTS = (1, 2, 3)
TARGET = 1.1


def die(msg):
    print("daemons bench: %s" % msg, file=sys.stderr)
    sys.exit(1)


def redis_cpu(r):
    c = r.info("cpu")
    return c["used_cpu_sys"] + c["used_cpu_user"]


def commandstats(r):
    """{command: (calls, usec)} of INFO commandstats."""
    return {k[len("cmdstat_"):]: (v["calls"], v["usec"]) for k, v in r.info("commandstats").items()}


def window(r, ds):
    """One measured window: {s, cpu, evalsha, batches, drained, fenced, errors} (deltas)."""
    w0 = [d.worker() for d in ds]
    c0, s0, t0 = redis_cpu(r), commandstats(r), time.monotonic()
    time.sleep(WINDOW)
    c1, s1, t1 = redis_cpu(r), commandstats(r), time.monotonic()
    w1 = [d.worker() for d in ds]
    cmds = {k: (v[0] - s0.get(k, (0, 0))[0], v[1] - s0.get(k, (0, 0))[1]) for k, v in s1.items()}
    cmds.pop("info", None)
    e0, e1 = s0.get("evalsha", (0, 0))[0], s1.get("evalsha", (0, 0))[0]

    def delta(f):
        return sum(f(b) - f(a) for a, b in zip(w0, w1))
    return {"s": t1 - t0, "cpu": c1 - c0, "evalsha": e1 - e0,
            "cmds": cmds,
            "polls": delta(lambda w: w["jobs"]["drain"]["polls"] + w["jobs"]["prune"]["polls"]),
            "batches": delta(lambda w: w["jobs"]["drain"]["batches"]),
            "drained": delta(lambda w: w["jobs"]["drain"]["drained"]),
            "fenced": delta(lambda w: w["leases"]["fenced"]),
            "errors": delta(lambda w: w["errors"])}


def settle(store, ds):
    took, hold, owned = de.converge(store, ds, (1, de.SHARDS), timeout=15)
    if took is None:
        die("the leases of %s did not settle in 15 s (lease keys %r, owned %r)" % (
            ", ".join(d.id for d in ds), de.counts(hold), owned))
    time.sleep(1.0)
    return de.counts(hold)


def span(v, fmt):
    return "%s [%s-%s]" % (fmt % statistics.median(v), fmt % min(v), fmt % max(v))


def one_round(r, store, url, ds, extra, label):
    """1, 2, 3 daemons in turn (b1 is running; b2 and b3 start), a window each, then b2 and b3 stop:
    {n: window}.  `ds` is [b1]."""
    print("-- %s" % label)
    print("  %-8s %-16s %-9s %-22s %-20s %-12s %s" % (
        "daemons", "shards owned", "window s", "Redis CPU s (busy %)", "EVALSHA calls (/s)", "drain calls",
        "entries drained"))
    row = {}
    for n in COUNTS:
        while len(ds) < n:
            d = de.Daemon("b%d" % (len(ds) + 1), url, "bench-%s" % label.replace(" ", "-"), extra)
            ds.append(d)
            if not de.wait_up(store, [d]):
                die("%s did not get ready (log: %s)" % (d.id, d.log_tail()))
        owned = settle(store, ds)
        m = window(r, ds)
        if m["errors"] or m["fenced"]:
            die("%d daemons counted %d errors and %d fenced calls in the window" % (n, m["errors"], m["fenced"]))
        row[n] = m
        print("  %-8d %-16s %-9.2f %-22s %-20s %-12d %d" % (
            n, " ".join("%d" % owned.get(d.id, 0) for d in ds), m["s"],
            "%.3f (%.1f %%)" % (m["cpu"], 100 * m["cpu"] / m["s"]),
            "%d (%.0f)" % (m["evalsha"], m["evalsha"] / m["s"]), m["batches"], m["drained"]))
        print("  %8s commands a second (Redis us each; those of the scripts too): %s; the daemons' registry polls "
              "%.0f/s" % ("", ", ".join("%s %.0f (%.1f)" % (k, c / m["s"], u / c) for k, (c, u) in
                                       sorted(m["cmds"].items(), key=lambda kv: -kv[1][1]) if c),
                          m["polls"] / m["s"]))
        sys.stdout.flush()
    for d in ds[1:]:
        rc = d.terminate()
        if rc != 0:
            die("%s exited %r after SIGTERM (expected 0; log: %s)" % (d.id, rc, d.log_tail()))
    del ds[1:]
    return row


def ratios(rounds, n, key):
    return [(rr[n][key] / rr[n]["s"]) / (rr[1][key] / rr[1]["s"]) for rr in rounds if rr[1][key]]


def main():
    if not os.access(SLUICED, os.X_OK):
        die("%s is not an executable (make all, or set SLUICED)" % SLUICED)
    lb = os.path.join(LUA_DIR, "leaky_bucket.lua")
    if not os.path.exists(lb):
        die("%s not found (make lua, or set LUA_DIR)" % lb)
    cpus = sorted(os.sched_getaffinity(0))
    pin = PIN and len(cpus) >= 2
    with open("/proc/cpuinfo") as f:
        model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    print("== sluiced x 1, 2, 3 on the same leaky buckets (bench/daemons.py), %s" %
          time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    with open("/proc/loadavg") as f:
        print("machine: %d CPUs, %s; load average %s" % (len(cpus), model, " ".join(f.read().split()[:3])))
    tmp = tempfile.mkdtemp(prefix="sluice-daemons-bench.")
    de.RUN.update(sluiced=SLUICED, tmp=tmp)
    srv = None
    rounds = []
    try:
        if pin:
            os.sched_setaffinity(0, {cpus[0]})   # redis-server inherits CPU 0
        srv, r = start_redis(tmp)
        if pin:
            os.sched_setaffinity(0, set(cpus[1:]))   # this script and the daemons: the others
            print("pinned: redis-server to CPU %d, this script and the daemons to CPU%s %s" % (
                cpus[0], "s" if len(cpus) > 2 else "", ",".join(map(str, cpus[1:]))))
        else:
            print("pinned: no (BENCH_PIN=0 or one CPU)")
        url = "redis://127.0.0.1:%d/0" % r.connection_pool.connection_kwargs["port"]
        store = de.Store(r=r)
        with open(lb) as f:
            sha = store.load(f.read())
        # the daemon's defaults (de.Daemon's id, and its max_clock_skew_ms 0: not de's lease TTL and tick)
        extra = {"lease_ttl_ms": de.DROP, "drain_interval_ms": de.DROP}
        ds = [de.Daemon("b1", url, "bench", extra)]
        if not de.wait_up(store, ds):
            die("b1 did not get ready (log: %s)" % ds[0].log_tail())
        print("the daemons at their defaults (drain every 100 ms, lease_ttl_ms 2000) but max_clock_skew_ms 0; "
              "window %.1f s" % WINDOW)
        print()
        idle = one_round(r, store, url, ds, extra, "nothing registered (the cost of being there)")
        t = time.monotonic()
        de.fill(store, sha, PATHS, b"/bench/d", RATE)
        print()
        print("filled %d leaky buckets (%d entries each, capacity %d, %g a second: %.0f leaks a second) in %.1f s; "
              "%d rounds" % (PATHS, de.FILL, de.CAPACITY, RATE, PATHS * RATE, time.monotonic() - t, REPEAT))
        for rnd in range(REPEAT):
            rounds.append(one_round(r, store, url, ds, extra, "round %d" % (rnd + 1)))
        rc = ds[0].terminate()
        if rc != 0:
            die("b1 exited %r after SIGTERM (expected 0)" % rc)
    finally:
        de.kill_all()
        if srv:
            srv.kill()
            srv.wait()
        shutil.rmtree(tmp, ignore_errors=True)

    print()
    print("  %-8s %-26s %-26s %-26s %-20s" % ("daemons", "Redis CPU ms/s", "EVALSHA calls/s", "drain calls/s",
                                               "entries drained/s"))
    for n in COUNTS:
        v = [rr[n] for rr in rounds]
        print("  %-8d %-26s %-26s %-26s %-20s" % (
            n, span([1000 * m["cpu"] / m["s"] for m in v], "%.1f"), span([m["evalsha"] / m["s"] for m in v], "%.0f"),
            span([m["batches"] / m["s"] for m in v], "%.0f"), span([m["drained"] / m["s"] for m in v], "%.0f")))
    print()
    for n in COUNTS[1:]:
        rt = {k: ratios(rounds, n, k) for k in ("cpu", "evalsha", "batches", "drained")}
        worst = max(statistics.median(rt[k]) for k in ("cpu", "evalsha", "batches") if rt[k])
        print("RESULT daemons %d / 1 on %d buckets (%g leaks/s), same rounds: Redis CPU %s, EVALSHA calls %s, drain "
              "shard calls %s (entries drained %s); target <= %.1fx: %s" % (
                  n, PATHS, PATHS * RATE, span(rt["cpu"], "%.2fx"), span(rt["evalsha"], "%.2fx"),
                  span(rt["batches"], "%.2fx"), span(rt["drained"], "%.2fx") if rt["drained"] else "-", TARGET,
                  "met" if worst <= TARGET else "NOT met"))
    one = [rr[1] for rr in rounds]
    print("RESULT daemons 1 on %d buckets: Redis CPU %s ms a second, %s EVALSHA calls a second, %s drain shard calls "
          "a second" % (PATHS, span([1000 * m["cpu"] / m["s"] for m in one], "%.1f"),
                        span([m["evalsha"] / m["s"] for m in one], "%.0f"),
                        span([m["batches"] / m["s"] for m in one], "%.0f")))
    print("RESULT daemons with nothing registered: Redis CPU %s ms a second, EVALSHA calls %s a second (1, 2, 3 "
          "daemons)" % (" / ".join("%.1f" % (1000 * idle[n]["cpu"] / idle[n]["s"]) for n in COUNTS),
                        " / ".join("%.0f" % (idle[n]["evalsha"] / idle[n]["s"]) for n in COUNTS)))


if __name__ == "__main__":
    main()
