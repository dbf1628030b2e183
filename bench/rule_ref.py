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

Variants: explicit (ARGV[4] "", numbers in ARGV[5..]); name (ARGV[4] the
rule's name); star (ARGV[4] "*", the path has state: the cache in its state
answers, one HMGET of the copy); star-cold ("*" with the copy's :version
changed before every call: HGETALL and a decode per rule each time).
Median of BENCH_RULE_REPEAT (3) runs.  Figures, not pass/fail.
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
REPEAT = int(os.environ.get("BENCH_RULE_REPEAT", "3"))
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


def usec_per_call(r):
    st = r.info("commandstats").get("cmdstat_evalsha")
    return st["usec_per_call"] if st else float("nan")


def run(r, sha, keys, argv, calls, bump=None):
    r.config_resetstat()
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
    return usec_per_call(r)


def main():
    import json
    tmp = tempfile.mkdtemp(prefix="sluice-bench-rule.")
    port = free_port()
    srv = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                            "--appendonly", "no", "--dir", tmp, "--logfile", os.path.join(tmp, "redis.log")])
    try:
        r = redis.Redis(port=port)
        for _ in range(200):
            try:
                r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.02)
        print("rule references: Redis time per client call (us, usec_per_call of evalsha), "
              "median of %d runs of %d calls, %d rules in the copy" % (REPEAT, CALLS, NRULES))
        print("%-16s %9s %9s %9s %10s %7s %7s" % ("algorithm", "explicit", "name", "star", "star-cold",
                                                   "name/x", "star/x"))
        for alg, (fields, explicit) in ALGOS.items():
            sha = r.script_load(open(os.path.join(LUA, alg + ".lua")).read())
            res = {}
            for variant in ("explicit", "name", "star", "star-cold"):
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
                elif variant == "name":
                    argv = [path, "", "", "api"]
                else:
                    argv = [path, "", "", "*"]
                bump = keys[3] if variant == "star-cold" else None
                run(r, sha, keys, argv, 200, bump)  # warm: state exists, the * cache is written
                res[variant] = statistics.median(run(r, sha, keys, argv, CALLS, bump) for _ in range(REPEAT))
            x = res["explicit"]
            print("%-16s %9.2f %9.2f %9.2f %10.2f %6.2fx %6.2fx" % (alg, x, res["name"], res["star"],
                                                                     res["star-cold"], res["name"] / x,
                                                                     res["star"] / x))
    finally:
        srv.terminate()
        srv.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
