#!/usr/bin/python3
"""Redis server time per client call by rule reference (ARGV[4]) against the
same call with explicit numbers (issue 9: a rule reference at most 1.3x).

Run by `make bench` (or alone from the repository root, after `make lua`).
Starts a private redis-server, loads each built client script
(build/lua/<algorithm>.lua) with SCRIPT LOAD and sends BENCH_RULE_CALLS
(20000) EVALSHA calls per variant in pipelines; the figure is Redis's own
time per call, INFO commandstats usec_per_call of evalsha (the network and
this client left out), after CONFIG RESETSTAT.  Every call is admitted
(large limits, so each one pays the admission's writes).  The shard's rules
copy holds BENCH_RULES (20) rules of the algorithm, ":version" and
":max_clock_skew_ms", as the daemon writes it.

With BENCH_RULE_CALLGRIND=1 Redis runs under valgrind's callgrind
(--toggle-collect=evalShaCommand, as BENCHMARKS.md's client figures) and the
figure is instructions per call, which the machine's load does not move
(use fewer calls: BENCH_RULE_CALLS=1000, BENCH_RULE_REPEAT=1).

BENCH_RULE_VARIANTS picks variants (e.g. "explicit" alone, to measure
scripts that take no rule reference: SLUICE_LUA=<their directory>).

Variants: explicit (ARGV[4] "", numbers in ARGV[5..]); name (ARGV[4] the
rule's name); star (ARGV[4] "*", the path has state: the cache in its state
answers, one HMGET of the copy); star-cold ("*" with the copy's :version
changed before every call: HGETALL and a decode per rule each time);
explicit-lag (explicit numbers and an explicit now 1 s behind Redis TIME
at the start of the round, so that nearly every call records a larger lag
in the shard's stats: HGET and HSET, the lag's dearest case).
The variants run interleaved, BENCH_RULE_REPEAT (5) rounds; the median
and the fastest run of each (the machine's other jobs only ever add time).  Figures, not pass/fail.
"""
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import redis
import redis.crc

CALLS = int(os.environ.get("BENCH_RULE_CALLS", "20000"))
REPEAT = int(os.environ.get("BENCH_RULE_REPEAT", "5"))
VARIANTS = tuple(os.environ.get("BENCH_RULE_VARIANTS", "explicit name star star-cold explicit-lag").split())
NRULES = int(os.environ.get("BENCH_RULES", "20"))
LUA = os.environ.get("SLUICE_LUA", "build/lua")

ALGOS = {
    "leaky_bucket": ({"capacity": 1000000000, "rate": 1000000}, ["1000000000", "1000000"]),
    "sliding_log": ({"limit": 1000000000, "window_ms": 1000}, ["1000000000", "1000"]),
    "sliding_counter": ({"limit": 1000000000, "window_ms": 60000, "sub_windows": 6},
                        ["1000000000", "60000", "6"]),
    "fixed_window": ({"limit": 1000000000, "window_ms": 60000}, ["1000000000", "60000"]),
    "token_bucket": ({"capacity": 1000000000, "rate": 1000000}, ["1000000000", "1000000"]),
}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


CALLGRIND = os.environ.get("BENCH_RULE_CALLGRIND", "") not in ("", "0")


def d_ok(d):
    return d if all(v in d for v in ("explicit", "name", "star", "star-cold")) else {}


def usec_per_call(r):
    st = r.info("commandstats").get("cmdstat_evalsha")
    return st["usec_per_call"] if st else float("nan")


def run(r, sha, keys, argv, calls, bump=None, cg=None):
    """Redis time per call: usec_per_call of evalsha; with cg (the callgrind
    output file), the instructions per call inside evalShaCommand instead."""
    r.config_resetstat()
    if cg:
        subprocess.run(["callgrind_control", "-z", str(cg[0])], check=True, capture_output=True)
    done = 0
    while done < calls:
        p = r.pipeline(transaction=False)
        for i in range(min(500, calls - done)):
            if bump:
                p.hset(bump, ":version", "1:%d" % (done + i + 2))
            p.evalsha(sha, len(keys), *keys, *argv)
        for x in p.execute(raise_on_error=True):
            if isinstance(x, list) and x[0] != 1:
                raise SystemExit("bench: a call was denied: %r" % x)
        done += min(500, calls - done)
    if cg:
        before = set(os.listdir(cg[1]))
        subprocess.run(["callgrind_control", "-d", str(cg[0])], check=True, capture_output=True)
        for _ in range(100):
            new = [f for f in set(os.listdir(cg[1])) - before if f.startswith("cg.out")]
            if new:
                break
            time.sleep(0.1)
        time.sleep(0.3)
        total = None
        for line in open(os.path.join(cg[1], new[0])):
            if line.startswith("totals:") or line.startswith("summary:"):
                total = int(line.split()[1])
        os.unlink(os.path.join(cg[1], new[0]))
        return total / calls
    return usec_per_call(r)


def main():
    import json
    tmp = tempfile.mkdtemp(prefix="sluice-bench-rule.")
    port = free_port()
    pre = []
    if CALLGRIND:
        pre = ["valgrind", "--tool=callgrind", "--toggle-collect=evalShaCommand",
               "--callgrind-out-file=" + os.path.join(tmp, "cg.out")]
    srv = subprocess.Popen(pre + ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                            "--appendonly", "no", "--dir", tmp, "--logfile", os.path.join(tmp, "redis.log")])
    try:
        r = redis.Redis(port=port)
        for _ in range(600 if CALLGRIND else 200):
            try:
                r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.02)
        print("rule references: Redis %s per client call (%s), " % (
            ("instructions", "callgrind, inside evalShaCommand") if CALLGRIND else
            ("time", "us, usec_per_call of evalsha")) +
              "%d interleaved rounds of %d calls, %d rules in the copy" % (REPEAT, CALLS, NRULES))
        print("%-16s %-8s %9s %9s %9s %10s %7s %7s %12s" % ("algorithm", "", "explicit", "name", "star", "star-cold",
                                                        "name/x", "star/x", "explicit-lag"))
        for alg, (fields, explicit) in ALGOS.items():
            sha = r.script_load(open(os.path.join(LUA, alg + ".lua")).read())
            setups = {}
            for variant in VARIANTS:
                path = "/bench/%s/%s" % (alg, variant)
                k = redis.crc.key_slot(path.encode()) % 1024
                base = "sluice:{%d}" % k
                keys = [base + ":" + alg + ":" + path, base + ":" + alg + "_meta:" + path,
                        base + ":registry:" + alg, base + ":rules", base + ":stats"]
                copy = {":version": "1:1", ":max_clock_skew_ms": "10000"}
                for i in range(NRULES):
                    name = "r%02d" % i
                    rule = {"name": name, "match": "/other%02d/*" % i, "algorithm": alg}
                    rule.update(fields)
                    copy[name] = json.dumps(rule)
                rule = {"name": "api", "match": "/bench/*", "algorithm": alg}
                rule.update(fields)
                copy["api"] = json.dumps(rule)
                r.delete(keys[3])
                r.hset(keys[3], mapping=copy)
                if variant == "explicit":
                    argv = [path, "", "", ""] + explicit
                elif variant == "explicit-lag":
                    argv = [path, "", None, ""] + explicit  # now: set at each round
                elif variant == "name":
                    argv = [path, "", "", "api"]
                else:
                    argv = [path, "", "", "*"]
                bump = keys[3] if variant == "star-cold" else None
                if argv[2] is None:
                    tm = r.time()
                    argv[2] = str(tm[0] * 1000 + tm[1] // 1000 - 1000)
                run(r, sha, keys, argv, 200, bump)  # warm: state exists, the * cache is written
                setups[variant] = (keys, argv, bump)
            # the variants interleaved, round after round, so that the machine's other
            # load falls on all of them alike
            runs = {v: [] for v in VARIANTS}
            cg = (srv.pid, tmp) if CALLGRIND else None
            for _ in range(REPEAT):
                for v in VARIANTS:
                    keys, argv, bump = setups[v]
                    if v == "explicit-lag":
                        tm = r.time()
                        argv = argv[:2] + [str(tm[0] * 1000 + tm[1] // 1000 - 1000)] + argv[3:]
                    runs[v].append(run(r, sha, keys, argv, CALLS, bump, cg))
            res = {v: statistics.median(runs[v]) for v in VARIANTS}
            best = {v: min(runs[v]) for v in VARIANTS}
            if "name" not in d_ok(res):
                print("%-16s %-8s %s" % (alg, "median", "  ".join("%s %.2f" % (v, res[v]) for v in VARIANTS)))
                continue
            for what, d in (("median", res), ("fastest", best))[:1 if REPEAT == 1 else 2]:
                x = d["explicit"]
                print("%-16s %-8s %9.2f %9.2f %9.2f %10.2f %6.2fx %6.2fx %12s" % (
                    alg, what, x, d["name"], d["star"], d["star-cold"], d["name"] / x, d["star"] / x,
                    "%.2f" % d["explicit-lag"] if "explicit-lag" in d else ""))
    finally:
        srv.terminate()
        srv.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
