#!/usr/bin/python3
"""The soak (issue 13): sluiced for SOAK_MINUTES under constant client load, checked against exact counts.

One private redis-server (AOF, so its state survives the restart on the way)
and the normal build's sluiced; tests/soak_client.py's application plays on
100,000 paths (leaky buckets leaking one entry per 20 s and per 2 s, a sliding
log of 3 per 20 s, a fixed window of 4 per 10 s, by rule name and by `*`) and
compares every reply, and every 10 s a sample of paths (all of them at the
end), with tests/soak_model.py.  On the way: rule changes (PUT /v1/rules, the
application obeying the new limits once every shard's copy holds them),
resets (one path, and POST /v1/reset jobs, one a dry run), a Redis restart
(SHUTDOWN, which writes the AOF, then the same server again).  Every 10 s the
daemon's RSS and open fds (/proc/<pid>) and its tick lag (GET /v1/worker,
/metrics) are sampled; the run fails when the largest RSS or fd count of its
last third exceeds the first sample after the warm-up by more than RSS_TOL or
FD_TOL.

Usage: SOAK_MINUTES=10 tests/soak.py SLUICED LUA_DIR   (run by `make soak`)
Prints the samples as a table, then "soak: N minutes, M checks, K failed";
exit 1 on a failure.
"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse

import redis

import conformance as cf
from soak_client import PRUNE_MS, SKEW, Client

SAMPLE_S = 10
RSS_TOL = (0.10, 2048)  # growth allowed: 10 % of the baseline + 2 MiB (kB)
FD_TOL = 2              # open fds allowed above the baseline (an admin connection closing)
# before the baseline sample: a sixth of the run, at most WARMUP_S (100 s of the default 10 minutes),
# at least WARMUP_MIN_S: every path called once (at >= 1,000 calls/s) and the daemon's first mismatch
# census pass over them (one a minute, and at a rule change: its pipeline's buffers and thread arenas
# are 3.5 to 6 MB of the RSS, once, by some 70 s; heaptrack shows the live heap flat after that);
# what comes after is growth
WARMUP_S = 120
WARMUP_MIN_S = 70
COLUMNS = ("t_s", "rss_kB", "fds", "drain_lag_ms", "prune_lag_ms", "metrics_lag_ms", "due_age_ms",
           "calls/s", "checks", "failed")


class Run:
    """The processes of one soak and what it sampled."""

    def __init__(self, sluiced, lua_dir, tmp):
        self.sluiced, self.tmp = sluiced, tmp
        self.rport, self.aport = cf.free_port(), cf.free_port()
        self.c = Client(lua_dir)
        self.samples, self.notes = [], []
        self.srv = self.d = None

    # ---- processes ---------------------------------------------------------------

    def start_redis(self):
        """redis-server on self.rport with an AOF in tmp (the same files after a restart): seconds to PONG."""
        t0 = time.monotonic()
        self.srv = subprocess.Popen(["redis-server", "--port", str(self.rport), "--bind", "127.0.0.1",
                                     "--save", "", "--appendonly", "yes", "--appendfsync", "everysec",
                                     "--dir", self.tmp], stdout=subprocess.DEVNULL)
        self.r = redis.Redis(port=self.rport)
        while time.monotonic() - t0 < 30:
            try:
                if self.r.ping():
                    return time.monotonic() - t0
            except (redis.ConnectionError, redis.BusyLoadingError):
                time.sleep(0.02)
        raise RuntimeError("redis-server did not answer on port %d" % self.rport)

    def start_daemon(self):
        conf = {"redis": "redis://127.0.0.1:%d/0" % self.rport, "listen": "127.0.0.1:%d" % self.aport,
                "max_clock_skew_ms": SKEW, "prune_interval_ms": PRUNE_MS,
                "rules": [g["rule"] for g in self.c.groups]}
        self.d, self.dlog = cf.spawn_sluiced(self.sluiced, self.tmp, "soak", conf)
        cf.wait_ready(self.aport)
        cf.wait_copies(self.r, 10)
        self.c.connect(self.r, self.aport)

    def stop(self):
        rc = cf.stop_daemon(self.d, self.dlog) if self.d else None
        if self.srv:
            self.srv.terminate()
            self.srv.wait(30)
        return rc

    def worker(self):
        st, body = self.c.http("GET", "/v1/worker")
        return json.loads(body) if st == 200 else {}

    # ---- events on the way -------------------------------------------------------------

    def change_rules(self):
        """Every rule's "alt" field to its other value; the model follows once every shard's copy has it."""
        for g in self.c.groups:
            field, a, b = g["alt"]
            rule = dict(g["rule"], **{field: b if g["rule"][field] == a else a})
            body = {k: v for k, v in rule.items() if k != "name"}
            st, reply = self.c.http("PUT", "/v1/rules/" + rule["name"], json.dumps(body))
            self.c.check(st == 200, "PUT /v1/rules/%s: %d %r" % (rule["name"], st, reply[:200]))
            t0 = time.monotonic()
            cf.wait_copies(self.r, 15)
            p = self.r.pipeline(transaction=False)
            for k in range(1024):
                p.hget(b"sluice:{%d}:rules" % k, rule["name"])
            copies = [json.loads(x) if x else None for x in p.execute()]
            self.c.check(all(x is not None and x.get(field) == rule[field] for x in copies),
                         "every shard's copy of %s holds %s %r" % (rule["name"], field, rule[field]))
            g["rule"] = rule
            self.notes.append("%s %s=%s (%.0f ms)" % (rule["name"], field, rule[field],
                                                     (time.monotonic() - t0) * 1000))

    def reset_paths(self, n=20):
        """POST /v1/paths/{path}/reset on n paths (hot ones and others); each is empty afterwards."""
        picks = []
        for _ in range(n):
            g = random.choice(self.c.groups)
            i = random.randrange(500) if random.random() < 0.5 else random.randrange(len(g["models"]))
            p = self.c.path(g, i)
            st, body = self.c.http("POST", "/v1/paths/%s/reset" % urllib.parse.quote(p, safe=""))
            self.c.check(st == 200, "POST reset of %s: %d %r" % (p.decode(), st, body[:200]))
            self.c.forget(g, i)
            picks.append((g, i))
        self.c.check_stored(picks)
        self.notes.append("reset %d paths" % n)

    def bulk_reset(self, glob, dry_run=False):
        """POST /v1/reset of `glob` as a job; when it is done the models of its paths start again (not on a dry run)."""
        st, job = cf.reset_job(self.aport, json.dumps({"match": glob, "dry_run": dry_run}), timeout=120)
        ok = st == 202 and isinstance(job, dict) and job.get("state") == "done"
        self.c.check(ok, "POST /v1/reset %s dry_run %s: %d %r" % (glob, dry_run, st, job))
        n = 0 if dry_run else self.c.forget_matching(glob)
        picks = [(g, i) for g in self.c.groups for i in random.sample(range(len(g["models"])), 500)]
        self.c.check_stored(picks)
        self.notes.append("bulk reset %s%s: %s paths (%d in the model), %s entries, %s ms" % (
            glob, " (dry run)" if dry_run else "", job.get("paths") if ok else "?", n,
            job.get("entries") if ok else "?", job.get("elapsed_ms") if ok else "?"))

    def restart_redis(self):
        """SHUTDOWN (the AOF written), 3 s down, the same server again: the state survives whole, and the
        daemon works again (connected anew, a drain tick without error)."""
        before = self.worker().get("connects", 0)
        self.r.shutdown()
        self.srv.wait(30)
        time.sleep(3)
        load_s = self.start_redis()
        self.r.connection_pool.disconnect()
        self.c.r = self.r
        t0 = time.monotonic()
        recovered = None
        while time.monotonic() - t0 < 30:
            w = self.worker()
            if w.get("redis_up") and w.get("connects", 0) > before:
                recovered = time.monotonic() - t0
                break
            time.sleep(0.02)
        self.c.check(recovered is not None, "the daemon reconnected within 30 s of Redis back")
        self.c.check_sample(1000)
        self.notes.append("redis restarted (loaded in %.2f s); the daemon back %s s later" % (
            load_s, "%.2f" % recovered if recovered is not None else "never"))

    # ---- samples -----------------------------------------------------------------------

    def sample(self, t_s, calls_before, dt):
        pid = self.d.pid
        with open("/proc/%d/status" % pid) as f:
            rss = int(next(x for x in f if x.startswith("VmRSS:")).split()[1])
        fds = len(os.listdir("/proc/%d/fd" % pid))
        w = self.worker()
        jobs = w.get("jobs", {})
        st, body = self.c.http("GET", "/metrics")
        mlag = [float(x.rsplit(" ", 1)[1]) for x in body.decode().splitlines()
                if x.startswith('sluice_tick_lag_seconds{job="drain"}')]
        age = max(jobs.get(j, {}).get("oldest_due_age_ms", 0) for j in ("drain", "prune"))
        self.c.allow = PRUNE_MS + 2000 + age
        row = (t_s, rss, fds, jobs.get("drain", {}).get("lag_us", -1000) / 1000,
               jobs.get("prune", {}).get("lag_us", -1000) / 1000, mlag[0] * 1000 if mlag else -1, age,
               (self.c.calls - calls_before) / dt if dt > 0 else 0, self.c.checks, self.c.failed)
        self.samples.append(row)
        print("%6d %8d %5d %12.1f %12.1f %14.1f %10d %8.0f %9d %6d  %s" % (row + ("; ".join(self.notes),)),
              flush=True)
        self.notes = []

    def growth(self, total_s):
        """RSS and fds of the last third against the first sample after the warm-up; a run too short to have
        one before its last third (under some 2 minutes) checks no growth, and says so."""
        warm = max(WARMUP_MIN_S, min(WARMUP_S, total_s / 6))
        base = next((s for s in self.samples if warm <= s[0] < total_s * 2 / 3), None)
        last = [s for s in self.samples if s[0] >= total_s * 2 / 3]
        if base is None or not last:
            print("growth: not checked: no sample after the warm-up (%d s) before the last third" % warm)
            return
        rss, fds = max(s[1] for s in last), max(s[2] for s in last)
        rss_max = base[1] * (1 + RSS_TOL[0]) + RSS_TOL[1]
        print("growth: RSS %d kB at %d s (baseline), at most %d kB in the last third (allowed %d); "
              "fds %d, at most %d (allowed %d)" % (base[1], base[0], rss, rss_max, base[2], fds, base[2] + FD_TOL))
        self.c.check(rss <= rss_max, "RSS grew: %d kB -> %d kB" % (base[1], rss))
        self.c.check(fds <= base[2] + FD_TOL, "fds grew: %d -> %d" % (base[2], fds))


def schedule(total_s):
    """(second, what) of the events on the way, in order."""
    ev = [(total_s * f, "rules") for f in (0.2, 0.4, 0.6, 0.8)]
    ev += [(t, "reset") for t in range(30, int(total_s) - 15, 45)]
    ev += [(total_s * 0.3, "bulk /soak/lb/f/1*"), (total_s * 0.7, "bulk /soak/log/2*"),
           (total_s * 0.85, "dry /soak/fw/*"), (total_s * 0.5, "restart")]
    return sorted(ev)


def event(run, what):
    try:
        run_event(run, what)
    except (OSError, redis.RedisError, ValueError) as e:
        run.c.check(False, "%s: %r" % (what, e))


def run_event(run, what):
    if what == "rules":
        run.change_rules()
    elif what == "reset":
        run.reset_paths()
    elif what == "restart":
        run.restart_redis()
    else:
        kind, glob = what.split(" ")
        run.bulk_reset(glob, dry_run=kind == "dry")


def soak(run, total_s):
    events = schedule(total_s)
    start = time.monotonic()
    next_sample, last_calls, last_t = SAMPLE_S, 0, 0.0
    print(" ".join("%*s" % (w, c) for w, c in zip((6, 8, 5, 12, 12, 14, 10, 8, 9, 6), COLUMNS)) + "  events")
    while True:
        t = time.monotonic() - start
        if t >= total_s:
            break
        until = min([next_sample, total_s] + [e[0] for e in events[:1]])
        run.c.drive(start + until)
        while events and time.monotonic() - start >= events[0][0]:
            event(run, events.pop(0)[1])
        t = time.monotonic() - start
        if t >= next_sample:
            if run.d.poll() is not None:
                run.c.check(False, "sluiced exited with %r" % run.d.returncode)
                return
            run.sample(int(round(t)), last_calls, t - last_t)
            last_calls, last_t = run.c.calls, t
            run.c.check_sample(200)
            next_sample = (int(time.monotonic() - start) // SAMPLE_S + 1) * SAMPLE_S  # none doubled after a stall
    if time.monotonic() - start - last_t >= 1:
        run.sample(int(round(time.monotonic() - start)), last_calls, time.monotonic() - start - last_t)
    t0 = time.monotonic()
    before = run.c.checks
    run.c.check_all()
    print("soak: the final check of all %d paths took %.1f s" % (run.c.checks - before, time.monotonic() - t0))
    run.growth(total_s)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: SOAK_MINUTES=10 soak.py SLUICED LUA_DIR")
    minutes = float(os.environ.get("SOAK_MINUTES", "10"))
    tmp = tempfile.mkdtemp(prefix="sluice-soak-")
    run = Run(sys.argv[1], sys.argv[2], tmp)
    rc = "not started"
    try:
        run.start_redis()
        run.start_daemon()
        print("soak: %g minutes, redis-server :%d (AOF), sluiced :%d (pid %d), %d paths, load %s" % (
            minutes, run.rport, run.aport, run.d.pid, sum(len(g["models"]) for g in run.c.groups),
            open("/proc/loadavg").read().split()[0]), flush=True)
        soak(run, minutes * 60)
    except (OSError, redis.RedisError, ValueError, RuntimeError) as e:
        run.c.check(False, "the soak stopped: %r" % e)
    finally:
        rc = run.stop()
        run.c.check(rc == 0, "sluiced exits 0 on SIGTERM (%r)" % rc)
        if run.c.failed:
            shutil.copy(os.path.join(tmp, "soak.log"), "/tmp/sluice-soak-last.log")
            print("soak: the daemon's log is in /tmp/sluice-soak-last.log")
        shutil.rmtree(tmp, ignore_errors=True)
    print("soak: %g minutes, %d checks, %d failed" % (minutes, run.c.checks, run.c.failed))
    sys.exit(1 if run.c.failed else 0)


if __name__ == "__main__":
    main()
