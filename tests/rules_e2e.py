#!/usr/bin/python3
"""Rules that applications obey (DESIGN.md, "Rules"; issue 9), end to end.

An application drives sluice's client scripts the way one does, through a
real client library (Debian's python3-redis, `register_script`: EVALSHA,
then EVAL on NOSCRIPT), by rule name and by `*`, with no numbers of its own.
An operator changes the rules through a real sluiced's admin API mid-run;
the daemon writes the change into every shard's rules copy, and the
application's next calls obey it.  The admitted counts before and after are
exact: a sliding log of window 10 minutes and a leaky bucket leaking one
entry in 1000 s, so nothing leaves during the test.

Usage: tests/rules_e2e.py SLUICED LUA_DIR   (run by `make test`)
Prints one line per check and "rules_e2e: N passed, M failed"; exit 1 on a
failure.  Uses tests/conformance.py's helpers (the shard function and key
names written from DESIGN.md, not from sluice's code).
"""
import json
import os
import shutil
import sys
import tempfile
import time

import redis

import conformance as cf

RULES = [
    {"name": "login", "match": "/login/*", "algorithm": "sliding_log", "limit": 5, "window_ms": 600000},
    {"name": "upload", "match": "/upload/*", "algorithm": "leaky_bucket", "capacity": 3, "rate": 0.001},
]


def copy_of(r, path, name):
    """The rule `name` as the shard copy of `path` holds it (a dict), or None."""
    k = cf.shard(path)
    v = r.hget(b"sluice:{%d}:rules" % k, name)
    return json.loads(v) if v is not None else None


def wait_copy(r, path, name, field, value, timeout=5.0):
    """Wait until the copy of `path`'s shard holds rule `name` with field = value; seconds taken or None."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        c = copy_of(r, path, name)
        if c is not None and c.get(field) == value:
            return time.monotonic() - t0
        time.sleep(0.01)
    return None


def admitted(script, alg, path, ref, calls):
    """Calls of the script on `path` with rule reference `ref` and no numbers: (admitted, rules named)."""
    n, named = 0, set()
    for _ in range(calls):
        rep = script(keys=cf.client_keys(alg, path), args=[path, "", "", ref])
        n += rep[0]
        named.add(rep[4])
    return n, named


def run(r, sluiced, lua_dir, tmp):
    port = cf.free_port()
    d, log = cf.spawn_sluiced(sluiced, tmp, "sluice",
                              {"redis": "redis://127.0.0.1:%d/0" % r.connection_pool.connection_kwargs["port"],
                               "listen": "127.0.0.1:%d" % port, "rules": RULES})
    rc = None
    try:
        cf.wait_ready(port)
        log_script = r.register_script(open(os.path.join(lua_dir, "sliding_log.lua")).read())
        lb_script = r.register_script(open(os.path.join(lua_dir, "leaky_bucket.lua")).read())
        a, b, u = b"/login/alice", b"/login/bob", b"/upload/x"
        cf.check("the daemon wrote the config's rules into the shards' copies",
                 wait_copy(r, a, "login", "limit", 5) is not None and wait_copy(r, u, "upload", "capacity", 3)
                 is not None, repr(copy_of(r, a, "login")))

        n, named = admitted(log_script, "sliding_log", a, "login", 8)
        cf.check("by name: 8 calls, 5 admitted (limit 5), the reply names the rule",
                 n == 5 and named == {b"login"}, "%d %r" % (n, named))
        n, named = admitted(log_script, "sliding_log", b, "*", 8)
        cf.check("by *: the matching rule (/login/*), 5 of 8 admitted", n == 5 and named == {b"login"},
                 "%d %r" % (n, named))
        n, named = admitted(lb_script, "leaky_bucket", u, "upload", 5)
        cf.check("leaky bucket by name: 3 of 5 (capacity 3)", n == 3 and named == {b"upload"}, "%d %r" % (n, named))

        # the operator raises the limit; within a tick every copy has it
        t0 = time.monotonic()
        st, body = cf.http(port, "PUT", "/v1/rules/login",
                           '{"match":"/login/*","algorithm":"sliding_log","limit":8,"window_ms":600000}')
        took = wait_copy(r, a, "login", "limit", 8)
        cf.check("PUT /v1/rules/login (limit 8) reaches the shard copy", st == 200 and took is not None,
                 "%d %r" % (st, body))
        print("rules_e2e: PUT to the copy of /login/alice's shard: %.0f ms" % ((time.monotonic() - t0) * 1000))
        wait_copy(r, b, "login", "limit", 8)
        n, _ = admitted(log_script, "sliding_log", a, "login", 8)
        cf.check("a raised limit admits at once: 3 more of 8 (5 -> 8)", n == 3, str(n))
        n, _ = admitted(log_script, "sliding_log", b, "*", 8)
        cf.check("... by * too: 3 more of 8", n == 3, str(n))

        st, body = cf.http(port, "PUT", "/v1/rules/login",
                           '{"match":"/login/*","algorithm":"sliding_log","limit":2,"window_ms":600000}')
        cf.check("PUT /v1/rules/login (limit 2) reaches the copy",
                 st == 200 and wait_copy(r, a, "login", "limit", 2) is not None, "%d %r" % (st, body))
        n, _ = admitted(log_script, "sliding_log", a, "login", 4)
        cf.check("a lowered limit denies while the log holds more (8 >= 2): 0 of 4", n == 0, str(n))

        st, body = cf.http(port, "PUT", "/v1/rules/upload",
                           '{"match":"/upload/*","algorithm":"leaky_bucket","capacity":6,"rate":0.001}')
        cf.check("PUT /v1/rules/upload (capacity 6) reaches the copy",
                 st == 200 and wait_copy(r, u, "upload", "capacity", 6) is not None, "%d %r" % (st, body))
        n, _ = admitted(lb_script, "leaky_bucket", u, "upload", 5)
        cf.check("a raised capacity admits at once: 3 more of 5 (level 3 -> 6)", n == 3, str(n))

        # every call by rule counted its decision in its shard's stats; the daemon sums
        # the 1024 shards every 5 s into /metrics (raw sums, since the stats began)
        want = {("login", "allowed"): 16, ("login", "denied"): 20, ("upload", "allowed"): 6,
                ("upload", "denied"): 4}
        got = {}
        t0 = time.monotonic()
        while time.monotonic() - t0 < 12:
            st, body = cf.http(port, "GET", "/metrics")
            got = {}
            for line in body.decode().splitlines():
                if line.startswith("sluice_decisions_total{"):
                    labels, value = line.rsplit(" ", 1)
                    rule = labels.split('rule="')[1].split('"')[0]
                    dec = labels.split('decision="')[1].split('"')[0]
                    got[(rule, dec)] = int(float(value))
            if all(got.get(k) == v for k, v in want.items()):
                break
            time.sleep(0.2)
        cf.check("sluice_decisions_total counts every call by rule (login 16 allowed, 20 denied; upload 6, 4)",
                 all(got.get(k) == v for k, v in want.items()), repr(got))

        # a rule that does not exist is an error naming it; nothing is written
        keys = cf.client_keys("sliding_log", b"/login/carol")
        try:
            log_script(keys=keys, args=[b"/login/carol", "", "", "nope"])
            cf.check("an unknown rule name is an error reply", False, "no error")
        except redis.ResponseError as e:
            cf.check("an unknown rule name is an error reply naming it", "nope" in str(e), str(e))
        cf.check("... and writes nothing", r.exists(*keys[:2]) == 0)
        # `*` on a path no rule matches: admitted, nothing stored, the reply says "none"
        keys = cf.client_keys("sliding_log", b"/free/x")
        rep = log_script(keys=keys, args=[b"/free/x", "", "", "*"])
        cf.check("* with no matching rule: admitted, rule \"none\", nothing stored",
                 rep[0] == 1 and rep[4] == b"none" and r.exists(*keys[:2]) == 0
                 and r.zscore(keys[2], b"/free/x") is None, repr(rep))
    finally:
        rc = cf.stop_daemon(d, log)
    cf.check("sluiced exits 0 on SIGTERM", rc == 0, repr(rc))


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: rules_e2e.py SLUICED LUA_DIR")
    sluiced, lua_dir = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="sluice-rules-")
    srv, r = cf.start_redis(tmp)
    try:
        run(r, sluiced, lua_dir, tmp)
    finally:
        srv.terminate()
        srv.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)
    print("rules_e2e: %d passed, %d failed" % (cf.PASSED, cf.FAILED))
    sys.exit(1 if cf.FAILED else 0)


if __name__ == "__main__":
    main()
