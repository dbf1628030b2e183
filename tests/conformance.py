#!/usr/bin/python3
"""Conformance of sluice to DESIGN.md (docs/DESIGN.md), checked from outside.

Everything here is written from the design text alone, as another program
would call sluice: the shard function (CRC16/XMODEM of the hash-tag part,
mod 16384, mod 1024, with Python's binascii, not sluice's code), the key
names, the five KEYS and ARGV of the client scripts, the five-element reply
and the values the algorithms' definitions give, the admin routes and their
error JSON.  It starts its own redis-server and sluiced on free ports.

Usage: tests/conformance.py SLUICED LUA_DIR   (run by `make test`)
Prints one line per check and "conformance: N passed, M failed"; exit 1 on a
failure.  Needs Debian's python3-redis (tools/deps.sh installs it).
"""
import binascii
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

import redis

PASSED, FAILED = 0, 0


def check(name, ok, detail=""):
    global PASSED, FAILED
    if ok:
        PASSED += 1
        print("ok   " + name)
    else:
        FAILED += 1
        print("FAIL " + name + (": " + detail if detail else ""))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ---- DESIGN.md, "State model (key layout 2)" ---------------------------------


def keyslot(key: bytes) -> int:
    """Redis Cluster's key slot: CRC16/XMODEM of the hash tag when non-empty, else the key."""
    s = key.find(b"{")
    if s >= 0:
        e = key.find(b"}", s + 1)
        if e > s + 1:
            key = key[s + 1:e]
    return binascii.crc_hqx(key, 0) % 16384


def shard(path: bytes) -> int:
    return keyslot(path) % 1024


def client_keys(alg: str, path: bytes, k=None):
    """KEYS[1..5] of DESIGN.md's calling contract, with prefix sluice:."""
    k = shard(path) if k is None else k
    tag = b"sluice:{%d}" % k
    a = alg.encode()
    return [tag + b":" + a + b":" + path, tag + b":" + a + b"_meta:" + path,
            tag + b":registry:" + a, tag + b":rules", tag + b":stats"]


def snapshot(r):
    """Every key with its type, TTL state and DUMP: what "writes nothing" compares."""
    out = {}
    for key in r.scan_iter(count=1000):
        out[key] = (r.type(key), r.pttl(key) > 0, r.dump(key))
    return out


# ---- client scripts ------------------------------------------------------------

# (algorithm, parameters ARGV[5..]) and, from each algorithm's definition, the
# replies {allowed, remaining, retry_after_ms, reset_ms, rule} of a short trace
# at explicit times T0 + dt with costs n.  T0 is a multiple of 1000 in the past.
TRACES = {
    # capacity 3, leaks 1/s: admit 1 then 2; full; the next leak is 1000 ms after T0
    "leaky_bucket": (["3", "1"], [(0, 1, [1, 2, 0, 1000]), (0, 2, [1, 0, 0, 1000]),
                                  (0, 1, [0, 0, 1000, 1000]), (1000, 1, [1, 0, 0, 1000])]),
    # capacity 3 tokens, 1 token/s: take 1 (full again in 1 s), take 2 (full in 3 s),
    # 1 more needs 1 s of refill
    "token_bucket": (["3", "1"], [(0, 1, [1, 2, 0, 1000]), (0, 2, [1, 0, 0, 3000]),
                                  (0, 1, [0, 0, 1000, 3000])]),
    # 2 per 1000 ms: the oldest leaves the window 1000 ms after it came
    "sliding_log": (["2", "1000"], [(0, 1, [1, 1, 0, 1000]), (0, 1, [1, 0, 0, 1000]),
                                    (1, 1, [0, 0, 999, 999]), (1000, 2, [1, 0, 0, 1000])]),
    # 2 per window of 1000 ms starting at T0: a rejected request is not counted
    "fixed_window": (["2", "1000"], [(0, 1, [1, 1, 0, 1000]), (10, 1, [1, 0, 0, 990]),
                                     (20, 1, [0, 0, 980, 980]), (1000, 2, [1, 0, 0, 1000])]),
    # 2 per 1000 ms in 10 sub-windows of 100 ms: requests at T0 count until T0 + 1000
    "sliding_counter": (["2", "1000", "10"], [(0, 1, [1, 1, 0, 1000]), (50, 1, [1, 0, 0, 950]),
                                              (990, 1, [0, 0, 10, 10]), (1000, 1, [1, 1, 0, 1000])]),
}


def run_scripts(r, lua_dir):
    server_ms = int(r.time()[0]) * 1000
    t0 = (server_ms // 1000 - 600) * 1000
    for alg, (params, trace) in TRACES.items():
        src = open(os.path.join(lua_dir, alg + ".lua")).read()
        sha = r.script_load(src)
        path = ("/conf/" + alg).encode()
        keys = client_keys(alg, path)
        for i, (dt, n, want) in enumerate(trace):
            got = r.evalsha(sha, 5, *keys, path, str(n), str(t0 + dt), "", *params)
            check("%s call %d at T0+%d n=%d replies %s + rule \"\"" % (alg, i, dt, n, want),
                  got == want + [b""], repr(got))
        check("%s registers the path in sluice:{k}:registry:%s" % (alg, alg),
              r.zscore(keys[2], path) is not None, repr(r.zscore(keys[2], path)))
        # n "" is 1 and now "" is Redis TIME: a new path, admitted
        p2 = ("/conf/time/" + alg).encode()
        got = r.evalsha(sha, 5, *client_keys(alg, p2), p2, "", "", "", *params)
        check("%s with n \"\" and now \"\" admits a new path" % alg,
              isinstance(got, list) and len(got) == 5 and got[0] == 1 and got[4] == b"", repr(got))

        # bad input: an error naming the cause, and nothing written
        p3 = ("/conf/bad/" + alg).encode()
        k3 = shard(p3)
        bad = [
            ("keys of another shard", client_keys(alg, p3, (k3 + 1) % 1024), [p3, "", "", ""] + params,
             b"ERR sluice: path", b"belongs to shard %d" % k3),
            ("4 KEYS", client_keys(alg, p3)[:4], [p3, "", "", ""] + params, b"ERR sluice:", b"5 KEYS"),
            ("n 0", client_keys(alg, p3), [p3, "0", "", ""] + params, b"ERR sluice: n", b""),
            ("a rule name beside numbers", client_keys(alg, p3), [p3, "", "", "api"] + params,
             b"ERR sluice: ARGV[5]", b"with a rule reference"),
            ("a rule name the copy lacks", client_keys(alg, p3), [p3, "", "", "api"],
             b"ERR sluice: no rule \"api\"", b":rules"),
            ("empty path", client_keys(alg, b""), [b"", "", "", ""] + params, b"ERR sluice: path", b""),
            ("now 1 h ahead of TIME", client_keys(alg, p3), [p3, "", str(server_ms + 3600000), ""] + params,
             b"ERR sluice: now", b""),
            ("a bad parameter", client_keys(alg, p3), [p3, "", "", ""] + ["0"] + params[1:], b"ERR sluice:", b""),
        ]
        for what, ks, argv, prefix, part in bad:
            before = snapshot(r)
            try:
                got = r.evalsha(sha, len(ks), *ks, *argv)
                err = None
            except redis.ResponseError as e:
                got, err = None, str(e).encode()
            full = b"ERR " + err if err is not None and not err.startswith(b"ERR") else err
            check("%s refuses %s" % (alg, what),
                  full is not None and full.startswith(prefix) and part in full, repr(got if err is None else full))
            check("%s writes nothing on %s" % (alg, what), snapshot(r) == before)


# ---- the admin API (DESIGN.md, "Admin API") -------------------------------------


def http(port, method, path, body=None):
    """(status, body bytes) of one request; `body` a str (sent as UTF-8) or bytes (as they are)."""
    if isinstance(body, str):
        body = body.encode()
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), method=method, data=body)
    try:
        with urllib.request.urlopen(req, timeout=10) as res:
            return res.status, res.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def reset_job(port, body, timeout=60.0):
    """POST /v1/reset `body` (a bulk reset runs as a job: 202 and its Location), then GET
    /v1/jobs/{id} until it ended: (status of the POST, the ended job as a dict, or the POST's body)."""
    st, b = http(port, "POST", "/v1/reset", body)
    if st != 202:
        return st, b
    job = json.loads(b)
    until = time.time() + timeout
    while job.get("state") in ("queued", "running") and time.time() < until:
        time.sleep(0.005)
        st2, b = http(port, "GET", "/v1/jobs/" + job["id"])
        job = json.loads(b) if st2 == 200 else {"state": "unreadable %d" % st2}
    return st, job


def is_error(body, code=None):
    try:
        e = json.loads(body)["error"]
    except (ValueError, KeyError, TypeError):
        return False
    return isinstance(e.get("code"), str) and isinstance(e.get("message"), str) and (code is None or e["code"] == code)


def rules_state(r):
    """The rule store's three keys and the 1024 shards' copies, as DUMP: what a refused change must leave."""
    keys = [b"sluice:rules", b"sluice:rules:version", b"sluice:rules:epoch"] + \
        [b"sluice:{%d}:rules" % k for k in range(1024)]
    return {k: r.dump(k) for k in keys}


def wait_copies(r, timeout=5.0):
    """Until every shard's rules copy holds the store's "<epoch>:<version>" (the daemon writes them after a change)."""
    end = time.monotonic() + timeout
    while True:
        v, e = r.get(b"sluice:rules:version"), r.get(b"sluice:rules:epoch")
        want = (e or b"") + b":" + (v or b"0")
        p = r.pipeline(transaction=False)
        for k in range(1024):
            p.hget(b"sluice:{%d}:rules" % k, ":version")
        if all(x == want for x in p.execute()) or time.monotonic() > end:
            return
        time.sleep(0.02)


def error_of(body):
    try:
        return json.loads(body)["error"]
    except (ValueError, KeyError, TypeError):
        return {}


def run_admin(r, sluiced, lua_dir, tmp, url=None):
    """The admin API's checks, on the Redis `r` talks to (url: sluiced's --redis, e.g. a cluster node's)."""
    port = free_port()
    d, log = spawn_sluiced(sluiced, tmp, "sluice",
                           {"redis": url or "redis://127.0.0.1:%d/0" % r.connection_pool.connection_kwargs["port"],
                            "listen": "127.0.0.1:%d" % port,
                            "rules": [{"name": "api", "match": "/api/*", "algorithm": "leaky_bucket",
                                       "capacity": 10, "rate": 2}]})
    rc = None
    try:
        wait_ready(port)
        st, body = http(port, "GET", "/healthz")
        check("GET /healthz answers 200", st == 200, "%d %r" % (st, body))
        st, body = http(port, "GET", "/readyz")
        check("GET /readyz answers 200 with Redis up and rules loaded", st == 200, "%d %r" % (st, body))
        rd = json.loads(body) if st == 200 else {}
        check("... {status ready, redis up, mode single, 1 primary} on one Redis",
              url is not None or rd == {"status": "ready", "redis": "up", "mode": "single", "primaries": 1}, repr(rd))

        st, body = http(port, "GET", "/v1/rules")
        names = [x.get("name") for x in json.loads(body).get("rules", [])] if st == 200 else []
        check("GET /v1/rules lists the config's rule", st == 200 and names == ["api"], "%d %r" % (st, body))
        st, body = http(port, "GET", "/v1/rules/api")
        rule = json.loads(body) if st == 200 else {}
        check("GET /v1/rules/{name} answers the rule's fields",
              st == 200 and rule.get("capacity") == 10 and rule.get("rate") == 2 and rule.get("match") == "/api/*",
              "%d %r" % (st, body))
        st, body = http(port, "GET", "/v1/rules/nope")
        check("GET /v1/rules/{unknown} is 404 not_found, naming the rule",
              st == 404 and is_error(body, "not_found") and error_of(body)["message"] == 'no rule named "nope"',
              "%d %r" % (st, body))
        st, body = http(port, "PUT", "/v1/rules/win",
                        '{"match":"/win/*","algorithm":"fixed_window","limit":5,"window_ms":1000}')
        check("PUT /v1/rules/{name} creates (201)", st == 201, "%d %r" % (st, body))
        wait_copies(r)
        before = rules_state(r)
        st, body = http(port, "PUT", "/v1/rules/bad", '{"match":"/b","algorithm":"leaky_bucket","capacity":0,"rate":1}')
        check("PUT of an invalid rule (capacity 0) is 400 invalid_rule naming the field capacity",
              st == 400 and is_error(body, "invalid_rule") and error_of(body).get("field") == "capacity",
              "%d %r" % (st, body))
        st, body = http(port, "PUT", "/v1/rules/bad", '{"match":"/b","algorithm":"leaky_bucket","capacity":10,'
                        '"rate":1,"mode":"loud"}')
        check("PUT with mode neither enforce nor shadow is 400 invalid_rule naming the field mode",
              st == 400 and is_error(body, "invalid_rule") and error_of(body).get("field") == "mode",
              "%d %r" % (st, body))
        st, body = http(port, "PUT", "/v1/rules/x", "{nope")
        check("a body that is not JSON is 400 invalid_json", st == 400 and is_error(body, "invalid_json"),
              "%d %r" % (st, body))
        st, body = http(port, "GET", "/v1/rules/bad")
        check("... and stores nothing (GET 404; the store and the 1024 copies unchanged)",
              st == 404 and rules_state(r) == before, "%d %r; changed: %r" % (
                  st, body, [k for k, v in rules_state(r).items() if before.get(k) != v][:5]))
        st, body = http(port, "DELETE", "/v1/rules/win")
        check("DELETE /v1/rules/{name} deletes", st == 200 and http(port, "GET", "/v1/rules/win")[0] == 404,
              "%d %r" % (st, body))

        # a client admits 3 entries through the leaky bucket script, with the rule's numbers
        src = open(os.path.join(lua_dir, "leaky_bucket.lua")).read()
        path = b"/api/users"
        for _ in range(3):
            r.eval(src, 5, *client_keys("leaky_bucket", path), path, "", "", "", "10", "2")
        st, body = http(port, "GET", "/v1/paths/%2Fapi%2Fusers")
        p = json.loads(body) if st == 200 else {}
        check("GET /v1/paths/{path} answers DESIGN's fields",
              st == 200 and all(f in p for f in ("path", "algorithm", "rule", "count", "capacity", "remaining",
                                                 "reset_ms")), "%d %r" % (st, body))
        check("... path, algorithm, count 3 (or 2 if a leak came), capacity 10, remaining = capacity - count",
              p.get("path") == "/api/users" and p.get("algorithm") == "leaky_bucket" and p.get("count") in (2, 3)
              and p.get("capacity") == 10 and p.get("remaining") == 10 - p.get("count", -100), repr(p))
        check("... explicit numbers: rule null, recorded parameters shown",
              "rule" in p and p["rule"] is None and p.get("recorded") == {"capacity": 10, "rate": 2}, repr(p))
        st, body = http(port, "GET", "/v1/paths?match=%2Fapi%2F*&count=100")
        lst = json.loads(body) if st == 200 else {}
        check("GET /v1/paths lists the path, paged (a cursor)",
              st == 200 and [x.get("path") for x in lst.get("paths", [])] == ["/api/users"] and "cursor" in lst,
              "%d %r" % (st, body))
        st, body = http(port, "GET", "/v1/worker")
        w = json.loads(body) if st == 200 else {}
        check("GET /v1/worker answers ticks, drained, pruned, errors and the due backlog",
              st == 200 and all(k in w for k in ("ticks", "drained", "pruned", "errors"))
              and all("due_backlog" in j for j in w.get("jobs", {}).values()), "%d %r" % (st, body))
        rn = w.get("redis", {})
        nodes = rn.get("nodes", [])
        addr = "127.0.0.1:%d" % r.connection_pool.connection_kwargs["port"] if url is None else None
        check("GET /v1/worker's redis: one Redis is mode single, 1 primary owning 0-16383, up, no redirects",
              url is not None or (rn.get("mode") == "single" and rn.get("primaries") == 1 and len(nodes) == 1
                                  and nodes[0].get("address") == addr and nodes[0].get("slots") == 16384
                                  and nodes[0].get("ranges") == "0-16383" and nodes[0].get("up") is True
                                  and nodes[0].get("moved") == 0 and nodes[0].get("ask") == 0
                                  and nodes[0].get("last_error") is None), repr(rn))
        st, body = http(port, "POST", "/v1/worker/sweep")
        check("POST /v1/worker/sweep runs a sweep (200)", st == 200, "%d %r" % (st, body))
        st, dry = reset_job(port, '{"match":"/api/*","dry_run":true}')
        check("POST /v1/reset dry_run (202, a job) counts the path and removes nothing",
              st == 202 and dry.get("state") == "done" and dry.get("paths") == 1
              and r.exists(client_keys("leaky_bucket", path)[0]) == 1, "%d %r" % (st, dry))
        st, body = http(port, "POST", "/v1/paths/%2Fapi%2Fusers/reset")
        gone = r.exists(*client_keys("leaky_bucket", path)[:2]) == 0 and \
            r.zscore(client_keys("leaky_bucket", path)[2], path) is None
        check("POST /v1/paths/{path}/reset deletes the state, meta and due-index entry",
              st == 200 and json.loads(body).get("keys_removed") == 2 and gone, "%d %r" % (st, body))
        st, body = http(port, "GET", "/metrics")
        check("GET /metrics is Prometheus text", st == 200 and b"# TYPE sluice_" in body, "%d" % st)
        lines = body.decode(errors="replace").splitlines() if st == 200 else []
        check("/metrics: sluice_redis_node_up 1 and sluice_redis_node_slots 16384 for the one Redis",
              url is not None or ('sluice_redis_node_up{node="%s"} 1' % addr in lines
                                  and 'sluice_redis_node_slots{node="%s"} 16384' % addr in lines
                                  and "# TYPE sluice_redis_node_errors_total counter" in lines),
              "\n".join(x for x in lines if x.startswith("sluice_redis_node")))
        st, body = http(port, "DELETE", "/healthz")
        check("a method a route lacks is 405 method_not_allowed", st == 405 and is_error(body, "method_not_allowed"),
              "%d %r" % (st, body))
        st, body = http(port, "GET", "/v1/nowhere")
        check("an unknown route is 404 not_found", st == 404 and is_error(body, "not_found"), "%d %r" % (st, body))
        # GET / (the operator page) is issue 12's: README.md lists it as not built yet.
    finally:
        rc = stop_daemon(d, log)
    check("sluiced exits 0 on SIGTERM", rc == 0, repr(rc))


# ---- clients whose clock lags Redis (DESIGN.md, "Time") --------------------------
#
# "a client whose clock lags Redis by up to [max_clock_skew_ms] is never admitted
# more than the rule allows, with or without the daemon."  Each case below sends
# the same sequence of calls, in real time, to a Redis with a running sluiced (db
# 0: it drains, prunes, repairs and reclaims every 100 ms) and to one without
# (db 1 of the same server: no daemon looks at it), each call passing the
# client's own `now` (ARGV[3]) behind Redis TIME.  The admitted count is exact:
# what the algorithm's definition (lua/README.md) gives at the times the client
# passed, served at max(now, the path's time mark); the models below are that
# definition, written out, run on the same calls.  The cases follow a
# nominal clock, T0 - lag + offset (T0 = Redis TIME at the start), so that
# their counts are the numbers in the comments (a call sent late only makes
# the lag larger: those lags are far inside the horizon); the others read the
# clock as they send, minus the lag, which stays inside the horizon by
# LAG_MARGIN (the time a call is in flight).
#
# Not here: a lag of exactly max_clock_skew_ms.  A client whose clock is exactly
# the horizon behind Redis reaches Redis further behind than that by the time
# its call is in flight, and a worker job run in between acts past its clock.

EPS = 1e-9
LAG_MARGIN = 500  # ms a call may be sent late and stay within the horizon


class LeakyModel:
    """lua/README.md, "The leaky bucket (meter)": k = floor(rate * (t - last) / 1000 + carry)."""

    def __init__(self, capacity, rate):
        self.cap, self.rate, self.level, self.last, self.carry = capacity, rate, 0, None, 0.0

    def call(self, now, n):
        t = now if self.last is None or now >= self.last else self.last
        if self.level == 0:
            if self.last is not None:
                self.last, self.carry = t, 0.0  # an empty bucket earns no credit
        else:
            due = self.rate * (t - self.last) / 1000 + self.carry
            k = int(due + EPS)
            if k >= self.level:
                self.level, self.last, self.carry = 0, t, 0.0
            elif k > 0:
                self.level, self.last, self.carry = self.level - k, t, max(0.0, due - k)
        if self.level + n <= self.cap:
            if self.level == 0:
                self.last, self.carry = t, 0.0
            self.level += n
            return True
        return False


class TokenModel:
    """lua/README.md, "The token bucket": tokens(t) = min(capacity, tokens + rate * (t - last) / 1000)."""

    def __init__(self, capacity, rate):
        self.cap, self.rate, self.tokens, self.last = capacity, rate, float(capacity), None

    def call(self, now, n):
        t = now if self.last is None or now >= self.last else self.last
        tok = self.cap if self.last is None else min(self.cap, self.tokens + self.rate * (t - self.last) / 1000)
        if tok + EPS >= n:
            self.tokens, self.last = tok - n, t
            return True
        return False


class LogModel:
    """lua/README.md, "The sliding log": an entry admitted at s counts in [s, s + window)."""

    def __init__(self, limit, window_ms):
        self.limit, self.window, self.entries = limit, window_ms, []

    def call(self, now, n):
        t = max(now, self.entries[-1]) if self.entries else now
        live = [s for s in self.entries if s > t - self.window]
        if len(live) + n <= self.limit:
            self.entries = live + [t] * n
            return True
        return False


class CounterModel:
    """lua/README.md, "The sliding-window counter": the sum of sub-windows cur - N + 1 .. cur."""

    def __init__(self, limit, window_ms, sub_windows):
        self.limit, self.n, self.sub = limit, sub_windows, window_ms // sub_windows
        self.counts, self.mark = {}, None

    def call(self, now, n):
        t = now if self.mark is None or now >= self.mark else self.mark
        cur = t // self.sub
        if sum(self.counts.get(j, 0) for j in range(cur - self.n + 1, cur + 1)) + n <= self.limit:
            self.counts[cur] = self.counts.get(cur, 0) + n
            self.mark = t
            return True
        return False


class FixedModel:
    """lua/README.md, "The fixed window": at most limit in [k * window_ms, (k + 1) * window_ms)."""

    def __init__(self, limit, window_ms):
        self.limit, self.window, self.index, self.count, self.mark = limit, window_ms, None, 0, None

    def call(self, now, n):
        t = now if self.mark is None or now >= self.mark else self.mark
        w = t // self.window
        count = self.count if w == self.index else 0
        if count + n <= self.limit:
            self.index, self.count, self.mark = w, count + n, t
            return True
        return False


MODELS = {"leaky_bucket": LeakyModel, "token_bucket": TokenModel, "sliding_log": LogModel,
          "sliding_counter": CounterModel, "fixed_window": FixedModel}


def lag_steady(lag, period=50, span=12000, n=1):
    """(offset ms, lag ms, n): one call every `period` ms for `span` ms."""
    return [(i * period, lag, n) for i in range(span // period)]


def lag_case(sha, conns, alg, params, path, calls, nominal, t0_ms, t0_local, res):
    """Sends `calls` (offset, lag, n) at real times t0_local + offset, with now = t0_ms + offset - lag
    (nominal) or the clock then - lag, to each Redis of `conns`;
    res[path] = (admitted cost per connection, the model's, the nows admitted and their n, lateness)."""
    model = MODELS[alg](*[float(p) if "." in p else int(p) for p in params])
    keys = client_keys(alg, path)
    got, want, late, admitted_at = [0] * len(conns), 0, 0, []
    try:
        for off, lag, n in calls:
            wait = t0_local + off / 1000 - time.time()
            if wait > 0:
                time.sleep(wait)
            late = max(late, -wait * 1000)
            now = t0_ms + off - lag if nominal else t0_ms + int((time.time() - t0_local) * 1000) - lag
            for i, c in enumerate(conns):
                if c.evalsha(sha[alg], 5, *keys, path, str(n), str(now), "", *params)[0] == 1:
                    got[i] += n
                    if i == 0:
                        admitted_at.append((now, n, lag))
            if model.call(now, n):
                want += n
        res[path] = (got, want, admitted_at, late)
    except Exception as e:  # reported by the check, not lost in a thread
        res[path] = (None, want, admitted_at, repr(e))


def spawn_sluiced(sluiced, tmp, name, config):
    """Start sluiced with `config` (a dict) written to tmp/<name>.json, its log in tmp/<name>.log: (proc, log)."""
    conf = os.path.join(tmp, name + ".json")
    with open(conf, "w") as f:
        json.dump(config, f)
    log = open(os.path.join(tmp, name + ".log"), "w")
    return subprocess.Popen([sluiced, "--config", conf], stdout=log, stderr=log), log


def wait_ready(port):
    """Up to 5 s for a daemon on `port` to listen and store its rules (/readyz 200)."""
    for _ in range(100):
        if _can_connect(port) and http(port, "GET", "/readyz")[0] == 200:
            return
        time.sleep(0.05)


def stop_daemon(d, log):
    """SIGTERM, then the exit status (None when it had to be killed)."""
    d.terminate()
    try:
        rc = d.wait(10)
    except subprocess.TimeoutExpired:
        d.kill()
        rc = None
    log.close()
    return rc


def start_redis(tmp):
    """A private redis-server on a free port, no persistence: (proc, client)."""
    port = free_port()
    srv = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                            "--appendonly", "no", "--dir", tmp], stdout=subprocess.DEVNULL)
    r = redis.Redis(port=port)
    for _ in range(100):
        try:
            r.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    return srv, r


def start_daemon(sluiced, tmp, port, db, extra):
    listen = free_port()
    d, log = spawn_sluiced(sluiced, tmp, "lag%d" % db,
                           dict({"redis": "redis://127.0.0.1:%d/%d" % (port, db), "listen": "127.0.0.1:%d" % listen,
                                 "drain_interval_ms": 100, "prune_interval_ms": 100}, **extra))
    return d, log, listen


def run_lag(port, sluiced, lua_dir, tmp):
    # db 0: sluiced, horizon 10000 (default); db 1: no daemon.
    # db 2: sluiced with max_clock_skew_ms 1000; db 3: no daemon, the shards' copies say 1000 too.
    dbs = [redis.Redis(port=port, db=i) for i in range(4)]
    for r in dbs:
        r.flushdb()
    p = dbs[3].pipeline()
    for k in range(1024):
        p.hset(b"sluice:{%d}:rules" % k, ":max_clock_skew_ms", "1000")
    p.execute()
    daemons = [start_daemon(sluiced, tmp, port, 0, {}), start_daemon(sluiced, tmp, port, 2, {"max_clock_skew_ms": 1000})]
    try:
        for _ in range(200):  # the daemons write their horizon into every shard's rules copy at start
            if dbs[0].hget(b"sluice:{1023}:rules", ":max_clock_skew_ms") == b"10000" and \
               dbs[2].hget(b"sluice:{1023}:rules", ":max_clock_skew_ms") == b"1000":
                break
            time.sleep(0.05)
        check("sluiced writes max_clock_skew_ms into the shards' rules copies (10000; 1000 from its config)",
              dbs[0].hget(b"sluice:{1023}:rules", ":max_clock_skew_ms") == b"10000" and
              dbs[2].hget(b"sluice:{1023}:rules", ":max_clock_skew_ms") == b"1000")
        sha = {a: dbs[0].script_load(open(os.path.join(lua_dir, a + ".lua")).read()) for a in MODELS}

        rnd = random.Random(20261201)
        horizon = 10000 - LAG_MARGIN
        cases = []  # (name, algorithm, params, calls, horizon 10000 or 1000, the rule's number or None)
        # Each comment: the rule's bound over the client's own clock and the exact count.
        cases += [
            # 1 entry, 1 leaks per second, 240 calls at 0..11950 ms: one at 0, 1000, .., 11000: 12
            ("leaky 1@1/s, 20/s for 12 s, lag 5 s", "leaky_bucket", ["1", "1"], lag_steady(5000), 10000, 12),
            # 5 at 0..20 ms, the first leaks at 200 ms: a 6th then; the next leak is at 400 > 305: 6
            ("leaky 5@5/s, every 5 ms for 305 ms, lag 2 s", "leaky_bucket", ["5", "5"],
             lag_steady(2000, period=5, span=310), 10000, 6),
            # 10 tokens and 2 a second over 11950 ms: 10 + floor(2 * 11.95) = 33
            ("token 10@2/s, 20/s for 12 s, lag 5 s", "token_bucket", ["10", "2"], lag_steady(5000), 10000, 33),
            # 10 per 10 s: 10 at 0..450 ms, 10 more once sub-window 0 expires at 10000: 20 (2 windows)
            ("counter 10/10 s (10 sub-windows), 20/s for 12 s, lag 5 s", "sliding_counter", ["10", "10000", "10"],
             lag_steady(5000), 10000, 20),
            # 5 per 1000 ms: 5 at k*1000 .. k*1000+200 for k = 0..11: 60
            ("log 5/1 s, 20/s for 12 s, lag 5 s", "sliding_log", ["5", "1000"], lag_steady(5000), 10000, 60),
            # 5 per window of 1000 ms; T0 is a whole second and the lag too: 12 windows of 5: 60
            ("fixed 5/1 s, 20/s for 12 s, lag 5 s", "fixed_window", ["5", "1000"], lag_steady(5000), 10000, 60),
        ]
        params = {"leaky_bucket": ["1", "1"], "token_bucket": ["10", "2"], "sliding_log": ["5", "1000"],
                  "sliding_counter": ["10", "10000", "10"], "fixed_window": ["5", "1000"]}
        costs = {"leaky_bucket": (["3", "1"], 2), "token_bucket": (["10", "2"], 3), "sliding_log": (["6", "1000"], 3),
                 "sliding_counter": (["10", "10000", "10"], 3), "fixed_window": (["6", "1000"], 3)}
        for alg, prm in params.items():
            a = {"leaky_bucket": "leaky", "token_bucket": "token", "sliding_log": "log",
                 "sliding_counter": "counter", "fixed_window": "fixed"}[alg]
            cases += [
                # the largest lag the contract covers, less the margin for calls sent late
                ("%s, lag %d" % (a, horizon), alg, prm, lag_steady(horizon), 10000, None),
                # a lag drawn per call from 0..9500: served at max(now, mark), the path's own timeline
                ("%s, lag jitter 0..%d" % (a, horizon), alg, prm,
                 [(o, rnd.randint(0, horizon), 1) for o, _, _ in lag_steady(0)], 10000, None),
                # a client on Redis time and one 5 s behind on one path, 25 ms apart
                ("%s, two clients (lag 0 and 5 s)" % a, alg, prm,
                 sorted(lag_steady(0) + [(o + 25, 5000, 1) for o, _, _ in lag_steady(0)]), 10000, None),
                # a lag growing from 0 to 9500 ms over the 12 s
                ("%s, lag growing 0..%d" % (a, horizon), alg, prm,
                 [(o, o * horizon // 12000, 1) for o, _, _ in lag_steady(0)], 10000, None),
                # costs n > 1
                ("%s, cost %d, lag 5 s" % (a, costs[alg][1]), alg, costs[alg][0],
                 lag_steady(5000, n=costs[alg][1]), 10000, None),
                # bursts of 12 calls 2 ms apart, idle long enough (> horizon - lag) for the worker to act between
                ("%s, bursts 5.5 s apart, lag 4 s" % a, alg, prm,
                 [(b * 5500 + i * 2, 4000, 1) for b in range(3) for i in range(12)], 10000, None),
                # sluiced with max_clock_skew_ms 1000 and a client 900 ms behind
                ("%s, horizon 1000, lag 900" % a, alg, prm, lag_steady(900), 1000, None),
                ("%s, horizon 1000, lag 900, bursts 150..1700 ms apart" % a, alg, prm,
                 [(t + i * 2, 900, 1) for t in (0, 150, 600, 1550, 2650, 4050, 6150, 6750, 8050, 9750)
                  for i in range(12)], 1000, None),
            ]

        # T0: a whole second of Redis time (the fixed windows line up with it)
        sec, usec = dbs[0].time()
        time.sleep(1 - usec / 1e6)
        sec, usec = dbs[0].time()
        t0_ms, t0_local = sec * 1000, time.time() - usec / 1e6
        res, threads = {}, []
        for i, (name, alg, prm, calls, hz, rule) in enumerate(cases):
            conns = [redis.Redis(port=port, db=0 if hz == 10000 else 2), redis.Redis(port=port, db=1 if hz == 10000 else 3)]
            th = threading.Thread(target=lag_case, args=(sha, conns, alg, prm, ("/lag/%d" % i).encode(), calls,
                                                         rule is not None, t0_ms, t0_local, res))
            th.start()
            threads.append(th)
        for th in threads:
            th.join()
        for i, (name, alg, prm, calls, hz, rule) in enumerate(cases):
            got, want, admitted_at, late = res[("/lag/%d" % i).encode()]
            if got is None:
                check("lagging client: %s" % name, False, late)
                continue
            detail = "with sluiced %d, without %d, the rule %d%s; sent up to %d ms late" % (
                got[0], got[1], want, "" if rule is None else " (%d)" % rule, late)
            check("lagging client: %s: admitted exactly what the rule allows, with sluiced and without" % name,
                  got[0] == want and got[1] == want and (rule is None or want == rule), detail)
            if alg == "sliding_log" and len(calls) > 100 and "jitter" not in name:
                # the log's rule at each client's own clock (of two on a path, each its own; a clock
                # that jumps back and forth has no windows of its own): never more than limit in a window
                limit, window = int(prm[0]), int(prm[1])
                two = "two clients" in name
                worst = max(sum(n for s, n, g in admitted_at if t - window < s <= t and (not two or g == lag))
                            for t, _, lag in admitted_at)
                check("lagging client: %s: never more than %d in %d ms of %s own clock"
                      % (name, limit, window, "each client's" if two else "its"), worst <= limit, "%d" % worst)
        # the daemons did run their jobs meanwhile: at horizon 10000 a 12 s run leaves the drain a few
        # entries (the bursts'), at 1000 the drain and the prune both have work
        for (d, log, listen), hz in zip(daemons, (10000, 1000)):
            st, body = http(listen, "GET", "/v1/worker")
            w = json.loads(body) if st == 200 else {}
            check("lagging clients: sluiced (horizon %d) drained%s meanwhile, without errors"
                  % (hz, "" if hz == 10000 else " and pruned"),
                  st == 200 and w.get("drained", 0) > 0 and (hz == 10000 or w.get("pruned", 0) > 0)
                  and w.get("errors") == 0, "%d %r" % (st, body[:300]))
    finally:
        for d, log, _ in daemons:
            stop_daemon(d, log)
        for r in dbs:
            r.flushdb()


def _can_connect(port):
    try:
        socket.create_connection(("127.0.0.1", port), 0.2).close()
        return True
    except OSError:
        return False


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: conformance.py SLUICED LUA_DIR")
    sluiced, lua_dir = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="sluice-conf-")
    srv, r = start_redis(tmp)
    port = r.connection_pool.connection_kwargs["port"]
    try:
        # the shard function against Redis's own cluster slot, for a few awkward paths
        for p in (b"/api/users", b"}x", b"{a}b", b"{}x", b"a\0b", b"x" * 1000):
            check("shard of %r is keyslot mod 1024 (redis-py's key_slot)" % p[:12],
                  keyslot(p) == redis.crc.key_slot(p), "%d %d" % (keyslot(p), redis.crc.key_slot(p)))
        check("shard(/api/users) is 839 (lua/README.md's vector)", shard(b"/api/users") == 839)
        run_scripts(r, lua_dir)
        r.flushall()
        run_admin(r, sluiced, lua_dir, tmp)
        r.flushall()
        run_lag(port, sluiced, lua_dir, tmp)
    finally:
        srv.terminate()
        srv.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)
    print("conformance: %d passed, %d failed" % (PASSED, FAILED))
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
